//! Recognising the opening line of a shell here-document (`<<'EOF'`).
//!
//! Models often wrap a patch in the heredoc they would have used on the command
//! line, so both the parser (leniency) and the argv extractor need this.

/// Returns the delimiter word of a heredoc opener such as `<<EOF`, `<<'EOF'`
/// or `<< "END"`, or `None` when `text` is anything else.
///
/// `<<-` (tab-stripping) heredocs are not recognised: their terminator may be
/// indented, which would make the end of the patch ambiguous.
pub(crate) fn heredoc_delimiter(text: &str) -> Option<&str> {
    let rest = text.trim().strip_prefix("<<")?;
    if rest.starts_with('-') || rest.starts_with('<') {
        return None;
    }
    let rest = rest.trim_start();
    let (word, tail) = match rest.chars().next()? {
        quote @ ('\'' | '"') => {
            let inner = &rest[1..];
            let close = inner.find(quote)?;
            (&inner[..close], &inner[close + 1..])
        }
        _ => {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            (&rest[..end], &rest[end..])
        }
    };
    let plausible = !word.is_empty() && !word.chars().any(char::is_whitespace);
    (plausible && tail.trim().is_empty()).then_some(word)
}

/// Strips a leading `apply_patch`/`applypatch` command word and the blanks
/// after it, or returns `None` when `text` does not start with one followed by
/// a blank or a heredoc opener.
pub(crate) fn strip_command_word(text: &str) -> Option<&str> {
    let rest = text
        .strip_prefix("apply_patch")
        .or_else(|| text.strip_prefix("applypatch"))?;
    let trimmed = rest.trim_start_matches([' ', '\t']);
    (trimmed.len() < rest.len() || rest.starts_with("<<")).then_some(trimmed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delimiter_may_be_bare_single_or_double_quoted() {
        assert_eq!(heredoc_delimiter("<<EOF"), Some("EOF"));
        assert_eq!(heredoc_delimiter("<<'EOF'"), Some("EOF"));
        assert_eq!(heredoc_delimiter("<< \"PATCH\"  "), Some("PATCH"));
        assert_eq!(heredoc_delimiter("<<'END PATCH'"), None);
    }

    #[test]
    fn other_redirections_are_not_heredocs() {
        assert_eq!(heredoc_delimiter("<<-EOF"), None);
        assert_eq!(heredoc_delimiter("<<<EOF"), None);
        assert_eq!(heredoc_delimiter("<<EOF > out"), None);
        assert_eq!(heredoc_delimiter("<<"), None);
        assert_eq!(heredoc_delimiter("<EOF"), None);
    }

    #[test]
    fn command_word_needs_a_blank_after_it() {
        assert_eq!(strip_command_word("apply_patch <<EOF"), Some("<<EOF"));
        assert_eq!(strip_command_word("applypatch\t<<EOF"), Some("<<EOF"));
        assert_eq!(strip_command_word("apply_patcher <<EOF"), None);
        assert_eq!(strip_command_word("apply_patch<<EOF"), Some("<<EOF"));
        assert_eq!(strip_command_word("apply_patch"), None);
    }
}
