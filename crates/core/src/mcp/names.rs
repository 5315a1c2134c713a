//! The names the model knows an MCP server's tools by.
//!
//! A server `docs` is the namespace `mcp__docs__` (Responses); its tool `search` is the
//! function `search` in it, and `mcp__docs__search` where there are no namespaces (Chat).
//! Providers take `[A-Za-z0-9_-]{1,64}`: other characters become `_`, and a flat name
//! over 64 characters is cut and ends in a hash of the whole original name, so that it is
//! the same in every thread and every run, and two long names that share a beginning
//! still differ.

use std::collections::HashSet;

/// The longest name a provider takes.
pub(crate) const MAX_NAME_LEN: usize = 64;
/// The longest namespace, leaving a tool at least this much of the 64.
const MAX_NAMESPACE_LEN: usize = 40;
/// `_` and 8 hex digits.
const HASH_SUFFIX_LEN: usize = 9;

/// The namespace of server `server`: `mcp__<server>__`, shortened when very long.
pub(crate) fn namespace(server: &str) -> String {
    let full = format!("mcp__{}__", sanitize(server));
    if full.len() <= MAX_NAMESPACE_LEN {
        return full;
    }
    let keep = MAX_NAMESPACE_LEN - "mcp__".len() - "__".len() - HASH_SUFFIX_LEN;
    format!(
        "mcp__{}_{:08x}__",
        &sanitize(server)[..keep],
        stable_hash(server) as u32
    )
}

/// The model's names for `tools` of the server whose namespace is `namespace`, in order:
/// each fits the provider's rules and is unique, also once prefixed by the namespace.
pub(crate) fn tool_names<'a>(
    namespace: &str,
    tools: impl IntoIterator<Item = &'a str>,
) -> Vec<String> {
    let room = MAX_NAME_LEN
        .saturating_sub(namespace.len())
        .max(HASH_SUFFIX_LEN + 1);
    let mut taken = HashSet::new();
    tools
        .into_iter()
        .map(|tool| {
            let clean = sanitize(tool);
            // A name that fits stays readable (characters renamed at most) while unique.
            let name = if clean.len() <= room && !taken.contains(&clean) {
                clean.clone()
            } else {
                with_hash(&clean, tool, room)
            };
            let name = if taken.contains(&name) {
                with_hash(&clean, &format!("{tool}\u{0}{}", taken.len()), room)
            } else {
                name
            };
            taken.insert(name.clone());
            name
        })
        .collect()
}

/// `clean` cut to leave room for `_<hash of original>` within `room` characters.
fn with_hash(clean: &str, original: &str, room: usize) -> String {
    let keep = room.saturating_sub(HASH_SUFFIX_LEN).min(clean.len());
    format!("{}_{:08x}", &clean[..keep], stable_hash(original) as u32)
}

/// `name` with every character outside `[A-Za-z0-9_-]` replaced by `_` (never empty).
pub(crate) fn sanitize(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.is_empty() { "_".into() } else { clean }
}

/// FNV-1a: the same in every run and on every machine (std's hasher is seeded).
fn stable_hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_stay_as_they_are() {
        assert_eq!(namespace("docs"), "mcp__docs__");
        assert_eq!(
            tool_names("mcp__docs__", ["search", "get-page"]),
            ["search", "get-page"]
        );
    }

    #[test]
    fn characters_providers_refuse_become_underscores() {
        assert_eq!(
            tool_names("mcp__x__", ["files.read", "a b/c"]),
            ["files_read", "a_b_c"]
        );
        assert_eq!(sanitize("é"), "_");
        assert_eq!(sanitize(""), "_");
    }

    #[test]
    fn long_names_fit_and_keep_a_stable_distinguishing_hash() {
        let ns = namespace("docs");
        let long_a = format!("{}_alpha", "x".repeat(80));
        let long_b = format!("{}_beta", "x".repeat(80));
        let names = tool_names(&ns, [long_a.as_str(), long_b.as_str()]);
        for name in &names {
            assert!(ns.len() + name.len() <= MAX_NAME_LEN, "{ns}{name}");
        }
        assert_ne!(names[0], names[1]);
        // The same in another thread, another run.
        assert_eq!(names, tool_names(&ns, [long_a.as_str(), long_b.as_str()]));
        let server = "s".repeat(70);
        let ns = namespace(&server);
        assert!(ns.len() <= MAX_NAMESPACE_LEN, "{ns}");
        assert!(ns.starts_with("mcp__s") && ns.ends_with("__"));
        assert_eq!(ns, namespace(&server));
    }

    #[test]
    fn names_that_collide_once_cleaned_are_told_apart() {
        let names = tool_names("mcp__x__", ["a.b", "a_b", "a b"]);
        assert_eq!(names[0], "a_b");
        assert_ne!(names[1], names[0]);
        assert_ne!(names[2], names[1]);
        assert_ne!(names[2], names[0]);
        for name in &names {
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            );
        }
    }
}
