//! A large file and a many-hunk patch over it, with the content the patch must produce.

use std::fmt::Write as _;

/// The file, the patch and what the file holds once patched.
#[derive(Debug, Clone)]
pub struct GeneratedPatch {
    /// The file's content before.
    pub original: String,
    /// The `*** Begin Patch` text updating `path`.
    pub patch: String,
    /// The file's content after.
    pub expected: String,
}

/// How many context lines surround each change, as in Codex's patches.
const CONTEXT: usize = 3;

/// A `lines`-line file at `path` and a patch changing one line in each of `hunks` evenly
/// spaced places, each change with [`CONTEXT`] lines of context on both sides.
pub fn generate(path: &str, lines: usize, hunks: usize) -> GeneratedPatch {
    let original_lines: Vec<String> = (0..lines)
        .map(|i| {
            format!(
                "line {i:06}: the quick brown fox jumps over dog {}",
                (i * 7919) % 10007
            )
        })
        .collect();
    let mut expected_lines = original_lines.clone();
    let spacing = lines / hunks.max(1);
    let mut patch = format!("*** Begin Patch\n*** Update File: {path}\n");
    for k in 0..hunks {
        let at = k * spacing + spacing / 2;
        if at < CONTEXT || at + CONTEXT >= lines {
            continue;
        }
        let replacement = format!("line {at:06}: changed by hunk {k}");
        patch.push_str("@@\n");
        for line in &original_lines[at - CONTEXT..at] {
            let _ = writeln!(patch, " {line}");
        }
        let _ = writeln!(patch, "-{}", original_lines[at]);
        let _ = writeln!(patch, "+{replacement}");
        for line in &original_lines[at + 1..=at + CONTEXT] {
            let _ = writeln!(patch, " {line}");
        }
        expected_lines[at] = replacement;
    }
    patch.push_str("*** End Patch\n");
    GeneratedPatch {
        original: original_lines.join("\n") + "\n",
        patch,
        expected: expected_lines.join("\n") + "\n",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_patch_applies_to_exactly_the_expected_content() {
        let generated = generate("big.txt", 5_000, 200);
        assert_eq!(generated.patch.matches("\n@@\n").count(), 200);
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("big.txt"), &generated.original).expect("write");
        deputy_apply_patch::apply_patch(&generated.patch, dir.path()).expect("patch applies");
        let after = std::fs::read_to_string(dir.path().join("big.txt")).expect("read");
        assert_eq!(after, generated.expected);
        assert_ne!(generated.original, generated.expected);
    }
}
