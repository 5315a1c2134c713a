//! Which config keys exist, for the warning about one that does not: the fields of each
//! table (read from the types that deserialize them, so the list cannot drift), the
//! Codex keys deputy accepts without using, and the nearest known key to a typo.

use std::cell::Cell;

use serde::Deserialize;
use serde::de::{Deserializer, Visitor};

use super::mcp_servers::RawMcpServer;
use super::model_settings::ToolsToml;
use super::{ConfigToml, ModelFamilyOverride, ModelProviderInfo, SandboxWorkspaceWrite};
use crate::exec_env::ShellEnvironmentPolicy;

/// Top-level keys of Codex's config.toml that deputy reads without using: a config
/// written for Codex (or by a Codex client) loads with a note instead of a typo warning.
const CODEX_ONLY_KEYS: &[&str] = &[
    "analytics",
    "approvals_reviewer",
    "check_for_update_on_startup",
    "chatgpt_base_url",
    "cli_auth_credentials_store",
    "disable_paste_burst",
    "disable_response_storage",
    "experimental_compact_prompt_file",
    "experimental_instructions_file",
    "experimental_use_exec_command_tool",
    "experimental_use_freeform_apply_patch",
    "features",
    "feedback",
    "file_opener",
    "forced_chatgpt_workspace_id",
    "forced_login_method",
    "hide_agent_reasoning",
    "history",
    "instructions",
    "mcp_oauth_credentials_store",
    "model_max_output_tokens",
    "model_reasoning_summary_format",
    "notice",
    "notify",
    "otel",
    "preferred_auth_method",
    "project_doc_fallback_filenames",
    "projects",
    "service_tier",
    "show_raw_agent_reasoning",
    "tui",
    "windows_wsl_setup_acknowledged",
];

/// Keys of a Codex `[model_providers.*]` table that deputy reads without using.
const CODEX_ONLY_PROVIDER_KEYS: &[&str] = &[
    "env_http_headers",
    "env_key_instructions",
    "experimental_bearer_token",
    "requires_openai_auth",
    "supports_websockets",
];

/// Keys of a Codex `[mcp_servers.*]` table that deputy reads without using (OAuth login).
const CODEX_ONLY_MCP_SERVER_KEYS: &[&str] = &["oauth_resource", "scopes"];

/// The warning for `path` (dotted, as `serde_ignored` reports it), a key no table has.
pub(super) fn unknown_key_warning(path: &str) -> String {
    let (table, key) = path.rsplit_once('.').unwrap_or(("", path));
    let (fields, codex_only): (&[&str], &[&str]) = match table_kind(table) {
        Some(Table::Root) => (fields_of::<ConfigToml>(), CODEX_ONLY_KEYS),
        Some(Table::SandboxWorkspaceWrite) => (fields_of::<SandboxWorkspaceWrite>(), &[]),
        Some(Table::ShellEnvironmentPolicy) => (fields_of::<ShellEnvironmentPolicy>(), &[]),
        Some(Table::Provider) => (fields_of::<ModelProviderInfo>(), CODEX_ONLY_PROVIDER_KEYS),
        Some(Table::Tools) => (fields_of::<ToolsToml>(), &[]),
        Some(Table::ModelFamily) => (fields_of::<ModelFamilyOverride>(), &[]),
        Some(Table::McpServer) => (fields_of::<RawMcpServer>(), CODEX_ONLY_MCP_SERVER_KEYS),
        None => (&[], &[]),
    };
    if codex_only.contains(&key) {
        return format!("`{path}` is a Codex setting deputy does not use (ignored)");
    }
    match closest(key, fields.iter().chain(codex_only)) {
        Some(near) => format!("unknown config key `{path}` (ignored); did you mean `{near}`?"),
        None => format!("unknown config key `{path}` (ignored)"),
    }
}

/// `", did you mean `x`?"` naming the nearest of `known` to `name`, or nothing.
pub(super) fn did_you_mean<'a>(name: &str, known: impl IntoIterator<Item = &'a String>) -> String {
    closest(
        name,
        known
            .into_iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .iter(),
    )
    .map(|near| format!("; did you mean `{near}`?"))
    .unwrap_or_default()
}

enum Table {
    Root,
    SandboxWorkspaceWrite,
    ShellEnvironmentPolicy,
    Provider,
    Tools,
    ModelFamily,
    McpServer,
}

fn table_kind(table: &str) -> Option<Table> {
    match table.split('.').collect::<Vec<_>>().as_slice() {
        [""] => Some(Table::Root),
        ["sandbox_workspace_write"] => Some(Table::SandboxWorkspaceWrite),
        ["shell_environment_policy"] => Some(Table::ShellEnvironmentPolicy),
        ["model_providers", _] => Some(Table::Provider),
        ["tools"] => Some(Table::Tools),
        ["model_families", _] => Some(Table::ModelFamily),
        ["mcp_servers", _] => Some(Table::McpServer),
        _ => None,
    }
}

/// The known name nearest to `name` by edit distance, if it is near enough to be a typo.
fn closest<'a>(name: &str, known: impl Iterator<Item = &'a &'a str>) -> Option<&'a str> {
    let allowed = (name.chars().count() / 5).clamp(2, 3);
    known
        .map(|candidate| (edit_distance(name, candidate), *candidate))
        .filter(|(distance, _)| *distance <= allowed)
        .min()
        .map(|(_, candidate)| candidate)
}

/// Levenshtein distance in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current.push(substitution.min(previous[j + 1] + 1).min(current[j] + 1));
        }
        previous = current;
    }
    previous[b.len()]
}

/// The field names `T`'s derived `Deserialize` expects, asked of the derive itself.
fn fields_of<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
    let fields = Cell::new(&[][..]);
    let _ = T::deserialize(FieldProbe(&fields));
    fields.get()
}

/// A deserializer that only records the fields a struct asks for, then gives up.
struct FieldProbe<'a>(&'a Cell<&'static [&'static str]>);

impl<'de> Deserializer<'de> for FieldProbe<'_> {
    type Error = serde::de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
        Err(serde::de::Error::custom("only fields are probed"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.set(fields);
        Err(serde::de::Error::custom("only fields are probed"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_lists_come_from_the_types() {
        let root = fields_of::<ConfigToml>();
        assert!(root.contains(&"approval_policy"), "{root:?}");
        assert!(root.contains(&"openai_base_url"), "{root:?}");
        assert!(fields_of::<SandboxWorkspaceWrite>().contains(&"network_access"));
        assert!(fields_of::<ModelProviderInfo>().contains(&"base_url"));
        // A field serde never reads is no key.
        assert!(!fields_of::<ModelProviderInfo>().contains(&"preferred_env_key"));
    }

    #[test]
    fn typos_get_the_nearest_key_and_codex_keys_a_note() {
        assert_eq!(
            unknown_key_warning("aproval_policy"),
            "unknown config key `aproval_policy` (ignored); did you mean `approval_policy`?"
        );
        assert_eq!(
            unknown_key_warning("sandbox_workspace_write.netwrk_access"),
            "unknown config key `sandbox_workspace_write.netwrk_access` (ignored); \
             did you mean `network_access`?"
        );
        assert_eq!(
            unknown_key_warning("model_providers.local.base_ulr"),
            "unknown config key `model_providers.local.base_ulr` (ignored); did you mean `base_url`?"
        );
        assert_eq!(
            unknown_key_warning("service_tier"),
            "`service_tier` is a Codex setting deputy does not use (ignored)"
        );
        assert_eq!(
            unknown_key_warning("completely_different"),
            "unknown config key `completely_different` (ignored)"
        );
        let providers = ["openai".to_string(), "ollama".to_string()];
        assert_eq!(
            did_you_mean("opnai", &providers),
            "; did you mean `openai`?"
        );
        assert_eq!(did_you_mean("anthropic", &providers), "");
    }

    #[test]
    fn edit_distance_counts_insertions_deletions_and_substitutions() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
    }
}
