//! Hunks-only unified diffs, as shown to approvers and recorded in events.

use similar::TextDiff;

/// Lines of unchanged context around each change.
const CONTEXT_LINES: usize = 3;

/// Unified diff from `old` to `new`: `@@ -a,b +c,d @@` hunk headers followed by
/// ` `, `-` and `+` lines, with 3 lines of context and no `---`/`+++` header.
/// Identical inputs give an empty string.
pub fn unified_diff(old: &str, new: &str) -> String {
    TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(CONTEXT_LINES)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn one_line_change_has_single_line_ranges() {
        assert_eq!(unified_diff("a\n", "b\n"), "@@ -1 +1 @@\n-a\n+b\n");
    }

    #[test]
    fn identical_texts_have_an_empty_diff() {
        assert_eq!(unified_diff("same\n", "same\n"), "");
    }

    #[test]
    fn context_is_three_lines_each_side() {
        let old: String = (1..=10).map(|n| format!("{n}\n")).collect();
        let new = old.replace("5\n", "five\n");
        assert_eq!(
            unified_diff(&old, &new),
            "@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
        );
    }

    #[test]
    fn adding_a_file_diffs_from_empty() {
        assert_eq!(unified_diff("", "x\ny\n"), "@@ -0,0 +1,2 @@\n+x\n+y\n");
    }
}
