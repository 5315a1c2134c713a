//! Dotted-path overrides (`-c key=value`, the MCP `config` object) and table merging.

use super::ConfigError;

/// Parses one `-c key=value`: the value as TOML, else as a plain string
/// (surrounding quotes stripped).
pub fn parse_cli_override(raw: &str) -> Result<(String, toml::Value), ConfigError> {
    let (key, value) = raw
        .split_once('=')
        .ok_or_else(|| ConfigError::Override(format!("`{raw}` is not of the form key=value")))?;
    let key = key.trim();
    if key.is_empty() || key.split('.').any(|part| part.trim().is_empty()) {
        return Err(ConfigError::Override(format!(
            "`{raw}` has an empty key or key segment"
        )));
    }
    let value = value.trim();
    if value.is_empty() {
        return Err(ConfigError::Override(format!(
            "`-c {raw}` has no value: write `-c {key}=VALUE`"
        )));
    }
    let parsed = toml::from_str::<toml::Table>(&format!("v = {value}"))
        .ok()
        .and_then(|mut table| table.remove("v"))
        .unwrap_or_else(|| toml::Value::String(strip_quotes(value).to_string()));
    Ok((key.to_string(), parsed))
}

fn strip_quotes(value: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|v| v.strip_suffix(quote))
        {
            return inner;
        }
    }
    value
}

/// Converts a JSON value (from an MCP `config` argument) to TOML; `null` has no TOML form.
pub fn json_to_toml(value: &serde_json::Value) -> Option<toml::Value> {
    use serde_json::Value as J;
    Some(match value {
        J::Null => return None,
        J::Bool(b) => toml::Value::Boolean(*b),
        J::Number(n) => match n.as_i64() {
            Some(i) => toml::Value::Integer(i),
            None => toml::Value::Float(n.as_f64()?),
        },
        J::String(s) => toml::Value::String(s.clone()),
        J::Array(items) => toml::Value::Array(items.iter().filter_map(json_to_toml).collect()),
        J::Object(map) => toml::Value::Table(
            map.iter()
                .filter_map(|(k, v)| Some((k.clone(), json_to_toml(v)?)))
                .collect(),
        ),
    })
}

/// Sets `a.b.c = value` in `table`, creating intermediate tables.
pub(super) fn set_dotted(
    table: &mut toml::Table,
    key: &str,
    value: toml::Value,
) -> Result<(), ConfigError> {
    let mut parts: Vec<&str> = key.split('.').map(str::trim).collect();
    let last = parts.pop().unwrap_or_default();
    let mut current = table;
    for part in parts {
        let entry = current
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        current = entry
            .as_table_mut()
            .ok_or_else(|| ConfigError::Override(format!("`{key}`: `{part}` is not a table")))?;
    }
    current.insert(last.to_string(), value);
    Ok(())
}

/// Merges `overlay` into `base`: tables merge key by key, everything else is replaced.
pub(super) fn merge_tables(base: &mut toml::Table, overlay: toml::Table) {
    for (key, value) in overlay {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(existing)), toml::Value::Table(incoming)) => {
                merge_tables(existing, incoming);
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}
