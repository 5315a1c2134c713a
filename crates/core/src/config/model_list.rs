//! The models a configuration names, for a front door that offers a choice of model
//! (the app-server's `model/list`): the model it resolves to, then every profile's.

use super::{ConfigError, ConfigLayers, read_config_file};

/// One model the configuration names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfiguredModel {
    /// The model name, as sent to the provider.
    pub model: String,
    /// Whether it is the model a thread gets when nothing else is asked for.
    pub is_default: bool,
    /// The `[profiles.*]` that select it, by name.
    pub profiles: Vec<String>,
}

/// The default model of `layers`, then the model of every profile in config.toml
/// (by profile name), each model once.
pub fn configured_models(layers: &ConfigLayers) -> Result<Vec<ConfiguredModel>, ConfigError> {
    let default = layers.load()?.model;
    let (table, _) = read_config_file(&layers.deputy_home.join("config.toml"))?;
    let mut profiles: Vec<(String, String)> = table
        .get("profiles")
        .and_then(toml::Value::as_table)
        .into_iter()
        .flatten()
        .filter_map(|(name, profile)| {
            let model = profile.get("model")?.as_str()?;
            Some((name.clone(), model.to_string()))
        })
        .collect();
    profiles.sort();
    let mut models = vec![ConfiguredModel {
        model: default,
        is_default: true,
        profiles: Vec::new(),
    }];
    for (name, model) in profiles {
        match models.iter_mut().find(|m| m.model == model) {
            Some(known) => known.profiles.push(name),
            None => models.push(ConfiguredModel {
                model,
                is_default: false,
                profiles: vec![name],
            }),
        }
    }
    Ok(models)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_comes_first_then_each_profile_model_once() {
        let home = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            home.path().join("config.toml"),
            "model = \"main\"\n\
             [profiles.fast]\nmodel = \"mini\"\n\
             [profiles.again]\nmodel = \"main\"\n\
             [profiles.quick]\nmodel = \"mini\"\n\
             [profiles.plain]\napproval_policy = \"never\"\n",
        )
        .expect("write config");
        let models =
            configured_models(&ConfigLayers::new(home.path().to_path_buf())).expect("models");
        assert_eq!(
            models,
            [
                ConfiguredModel {
                    model: "main".into(),
                    is_default: true,
                    profiles: vec!["again".into()],
                },
                ConfiguredModel {
                    model: "mini".into(),
                    is_default: false,
                    profiles: vec!["fast".into(), "quick".into()],
                },
            ]
        );
    }
}
