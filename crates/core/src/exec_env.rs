//! The environment a model's command starts with (`[shell_environment_policy]`).
//!
//! Security code: deputy's own environment holds the model provider's API key and whatever
//! secrets the user exported; a command the model runs must not see them unless the user
//! says so. The rules follow Codex's `shell_environment_policy`, applied in this order:
//! start from `inherit`, drop the default secret patterns (unless `ignore_default_excludes`),
//! drop `exclude`, add `set`, then keep only `include_only` when it is given.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use wildmatch::WildMatch;

/// Which of deputy's own variables a command starts from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EnvironmentInherit {
    /// Every variable deputy has.
    #[default]
    All,
    /// Only the few a shell needs to work: see [`CORE_VARIABLES`].
    Core,
    /// Nothing.
    None,
}

/// What `inherit = "core"` keeps.
pub const CORE_VARIABLES: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "USER", "USERNAME", "TMPDIR", "TEMP", "TMP", "LANG",
    "LC_ALL", "TERM",
];

/// Names that look like secrets or hold credentials; dropped unless
/// `ignore_default_excludes = true`. `*AUTH` and `*AUTH_*` rather than `*AUTH*`, which would
/// also drop `GIT_AUTHOR_NAME`; `SSH_AUTH_SOCK` is dropped on purpose (the agent signs in as
/// the user). Connection strings carry passwords: `DATABASE_URL`, `*_DSN` and the like.
pub const DEFAULT_EXCLUDES: &[&str] = &[
    "*KEY*",
    "*SECRET*",
    "*TOKEN*",
    "*PASSWORD*",
    "*PASSWD*",
    "*PASSPHRASE*",
    "*CREDENTIAL*",
    "*AUTH",
    "*AUTH_*",
    "*COOKIE*",
    "*DATABASE_URL*",
    "*DB_URL*",
    "*_DSN",
    "*CONNECTION_STRING*",
    "MYSQL_PWD",
    "REDIS_URL",
    "MONGODB_URI",
];

/// A command's whole environment, `(name, value)` in name order; shared, never changed.
pub type Environment = Arc<[(String, String)]>;

/// `[shell_environment_policy]` from config.toml.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShellEnvironmentPolicy {
    /// Where the environment starts from.
    #[serde(default)]
    pub inherit: EnvironmentInherit,
    /// Keep variables whose names look like secrets (see [`DEFAULT_EXCLUDES`]).
    #[serde(default)]
    pub ignore_default_excludes: bool,
    /// Name patterns (`*` and `?`, case-insensitive) to drop.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Variables to set, after the excludes.
    #[serde(default)]
    pub set: BTreeMap<String, String>,
    /// When not empty, only names matching one of these patterns are kept (last step).
    #[serde(default)]
    pub include_only: Vec<String>,
}

impl ShellEnvironmentPolicy {
    /// The environment for a command, computed from `inherited` (deputy's own variables).
    pub fn apply(
        &self,
        inherited: impl IntoIterator<Item = (String, String)>,
    ) -> Vec<(String, String)> {
        let patterns = |list: &[String]| -> Vec<WildMatch> {
            list.iter()
                .map(|p| WildMatch::new_case_insensitive(p))
                .collect()
        };
        let matches_any =
            |name: &str, patterns: &[WildMatch]| patterns.iter().any(|p| p.matches(name));
        let default_excludes: Vec<WildMatch> = if self.ignore_default_excludes {
            Vec::new()
        } else {
            DEFAULT_EXCLUDES
                .iter()
                .map(|p| WildMatch::new_case_insensitive(p))
                .collect()
        };
        let exclude = patterns(&self.exclude);
        let include_only = patterns(&self.include_only);

        let mut env: BTreeMap<String, String> = inherited
            .into_iter()
            .filter(|(name, _)| match self.inherit {
                EnvironmentInherit::All => true,
                EnvironmentInherit::Core => CORE_VARIABLES.contains(&name.as_str()),
                EnvironmentInherit::None => false,
            })
            .filter(|(name, _)| {
                !matches_any(name, &default_excludes) && !matches_any(name, &exclude)
            })
            .collect();
        env.extend(self.set.iter().map(|(k, v)| (k.clone(), v.clone())));
        if !include_only.is_empty() {
            env.retain(|name, _| matches_any(name, &include_only));
        }
        env.into_iter().collect()
    }

    /// The environment for a command, computed from deputy's own (non-UTF-8 variables are left
    /// out). deputy never changes its own environment once it runs, so each policy's result is
    /// computed once and shared: a thousand commands do not each copy deputy's environment and
    /// match every variable against every pattern.
    pub fn environment(&self) -> Environment {
        /// The policies seen last, newest at the end; threads rarely differ in theirs.
        static COMPUTED: Mutex<Vec<(ShellEnvironmentPolicy, Environment)>> = Mutex::new(Vec::new());
        const KEPT: usize = 8;
        let mut computed = COMPUTED.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, env)) = computed.iter().find(|(policy, _)| policy == self) {
            return env.clone();
        }
        let env: Environment = self
            .apply(
                std::env::vars_os()
                    .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
            )
            .into();
        if computed.len() == KEPT {
            computed.remove(0);
        }
        computed.push((self.clone(), env.clone()));
        env
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn names(env: &[(String, String)]) -> Vec<&str> {
        env.iter().map(|(k, _)| k.as_str()).collect()
    }

    const DEPUTY_ENV: &[(&str, &str)] = &[
        ("PATH", "/usr/bin"),
        ("HOME", "/home/u"),
        ("OPENAI_API_KEY", "sk-1"),
        ("GITHUB_TOKEN", "gh"),
        ("aws_secret_access_key", "s"),
        ("MonkeyBusiness", "contains key, case-insensitively"),
        ("EDITOR", "vi"),
    ];

    #[test]
    fn default_policy_keeps_everything_but_secret_looking_names() {
        let env = ShellEnvironmentPolicy::default().apply(vars(DEPUTY_ENV));
        assert_eq!(names(&env), vec!["EDITOR", "HOME", "PATH"]);
    }

    #[test]
    fn passwords_credentials_and_connection_strings_are_dropped_but_ordinary_names_kept() {
        let secrets = [
            "PGPASSWORD",
            "DATABASE_URL",
            "TEST_DATABASE_URL",
            "DOCKER_AUTH_CONFIG",
            "NPM_CONFIG__AUTH",
            "NPM_TOKEN",
            "SSH_AUTH_SOCK",
            "MYSQL_PWD",
            "SMTP_PASSWD",
            "GPG_PASSPHRASE",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "SENTRY_DSN",
            "SESSION_COOKIE",
            "DEPLOY_PRIVATE_KEY",
        ];
        let ordinary = [
            "PATH",
            "HOME",
            "PWD",
            "OLDPWD",
            "USER",
            "SHELL",
            "TERM",
            "LANG",
            "EDITOR",
            "GIT_AUTHOR_NAME",
            "GIT_AUTHOR_EMAIL",
            "XAUTHORITY",
            "DISPLAY",
            "TMPDIR",
            "CARGO_HOME",
            "XDG_SESSION_TYPE",
            "LS_COLORS",
        ];
        let inherited = secrets
            .iter()
            .chain(&ordinary)
            .map(|name| (name.to_string(), "v".to_string()));
        let env = ShellEnvironmentPolicy::default().apply(inherited);
        let mut expected = ordinary.to_vec();
        expected.sort_unstable();
        assert_eq!(names(&env), expected);
    }

    #[test]
    fn ignore_default_excludes_keeps_the_secrets() {
        let policy = ShellEnvironmentPolicy {
            ignore_default_excludes: true,
            ..Default::default()
        };
        assert_eq!(policy.apply(vars(DEPUTY_ENV)).len(), DEPUTY_ENV.len());
    }

    #[test]
    fn core_inherits_only_the_shell_basics() {
        let policy = ShellEnvironmentPolicy {
            inherit: EnvironmentInherit::Core,
            ..Default::default()
        };
        assert_eq!(names(&policy.apply(vars(DEPUTY_ENV))), vec!["HOME", "PATH"]);
    }

    #[test]
    fn exclude_then_set_then_include_only() {
        let policy = ShellEnvironmentPolicy {
            inherit: EnvironmentInherit::All,
            ignore_default_excludes: false,
            exclude: vec!["ed*".into()],
            set: [
                ("CI".to_string(), "1".to_string()),
                ("PATH".to_string(), "/bin".to_string()),
            ]
            .into_iter()
            .collect(),
            include_only: vec!["PATH".into(), "C?".into(), "EDITOR".into()],
        };
        assert_eq!(
            policy.apply(vars(DEPUTY_ENV)),
            vars(&[("CI", "1"), ("PATH", "/bin")])
        );
    }

    #[test]
    fn none_starts_empty_but_set_still_applies() {
        let policy = ShellEnvironmentPolicy {
            inherit: EnvironmentInherit::None,
            set: [("A_TOKEN".to_string(), "explicitly set".to_string())]
                .into_iter()
                .collect(),
            ..Default::default()
        };
        // `set` is the user's explicit choice, so the default excludes (applied before it) do not drop it.
        assert_eq!(
            policy.apply(vars(DEPUTY_ENV)),
            vars(&[("A_TOKEN", "explicitly set")])
        );
    }

    #[test]
    fn policy_parses_from_codex_spelling() {
        let policy: ShellEnvironmentPolicy = toml::from_str(
            r#"
inherit = "core"
ignore_default_excludes = true
exclude = ["AWS_*"]
set = { CI = "1" }
include_only = ["PATH"]
"#,
        )
        .unwrap();
        assert_eq!(policy.inherit, EnvironmentInherit::Core);
        assert!(policy.ignore_default_excludes);
        assert_eq!(policy.set["CI"], "1");
        assert!(toml::from_str::<ShellEnvironmentPolicy>("inherit = \"some\"").is_err());
    }
}
