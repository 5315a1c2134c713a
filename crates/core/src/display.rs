//! Model-controlled text made safe to show a person: on a terminal, or in a client's dialog.
//!
//! A terminal obeys the control characters in what it prints, and bidirectional formatting
//! characters reorder what follows them. Either lets text look like something else:
//! `touch X #\e[9D\e[K pytest` shows as `pytest` once the cursor moves back over the
//! `touch` and the line is erased, and `\u{202E}` prints the rest of a line backwards. So
//! every string the model (or a command it ran, or a file it wrote) controls goes through
//! this module on its way to a person, and the characters that can hide or reorder text
//! are shown as visible escapes — the same ones bash's `$'…'` quoting reads:
//! `\e`, `\n`, `\r`, `\t`, `\a`, `\b`, `\f`, `\v`, `\xHH` for other C0 controls and DEL,
//! `\uHHHH` for C1 controls and the bidirectional and line-separator characters.
//!
//! Escaped: C0 controls (U+0000–U+001F) and DEL; C1 controls (U+0080–U+009F, which some
//! terminals read as ESC-sequences of their own); the bidirectional marks, embeddings,
//! overrides and isolates (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069); and the
//! line and paragraph separators (U+2028, U+2029). Everything else, other non-ASCII
//! letters and emoji (joiners included) among it, is shown as it is.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` is shown escaped in every context.
fn always_escaped(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}'
        | '\u{7f}'..='\u{9f}'
        | '\u{61c}'
        | '\u{200e}'
        | '\u{200f}'
        | '\u{2028}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}')
}

/// Appends the visible escape of `c` (a character [`always_escaped`] names) to `out`.
fn push_escape(out: &mut String, c: char) {
    let _ = match c {
        '\u{1b}' => out.write_str("\\e"),
        '\n' => out.write_str("\\n"),
        '\r' => out.write_str("\\r"),
        '\t' => out.write_str("\\t"),
        '\u{7}' => out.write_str("\\a"),
        '\u{8}' => out.write_str("\\b"),
        '\u{c}' => out.write_str("\\f"),
        '\u{b}' => out.write_str("\\v"),
        '\u{0}'..='\u{1f}' | '\u{7f}' => write!(out, "\\x{:02X}", u32::from(c)),
        _ => write!(out, "\\u{:04X}", u32::from(c)),
    };
}

/// `text` with `escaped` characters replaced by their escapes; borrowed when none occur.
fn escape_where(text: &str, escaped: impl Fn(char) -> bool) -> Cow<'_, str> {
    let Some(first) = text.find(&escaped) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 8);
    out.push_str(&text[..first]);
    for c in text[first..].chars() {
        if escaped(c) {
            push_escape(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Text of several lines (a message, an explanation): newlines and tabs kept, every other
/// control and bidirectional character escaped.
pub fn escape_text(text: &str) -> Cow<'_, str> {
    escape_where(text, |c| c != '\n' && c != '\t' && always_escaped(c))
}

/// Text shown on one line (a command, a path, a plan step): newlines and tabs escaped too,
/// so that nothing it holds can start a line of its own.
pub fn escape_line(text: &str) -> Cow<'_, str> {
    escape_where(text, always_escaped)
}

/// `argv` as one line a person can read and a shell would run as exactly that argv: each
/// word as it is when it needs no quoting, in single quotes when it holds spaces or shell
/// syntax, and in bash's `$'…'` quoting, with visible escapes, when it holds any character
/// this module escapes (a NUL, which no argv can hold, included).
pub fn quote_argv<S: AsRef<str>>(argv: &[S]) -> String {
    let mut line = String::new();
    for (i, word) in argv.iter().enumerate() {
        if i > 0 {
            line.push(' ');
        }
        quote_word(&mut line, word.as_ref());
    }
    line
}

fn quote_word(out: &mut String, word: &str) {
    if !word.contains(always_escaped)
        && let Ok(quoted) = shlex::try_quote(word)
    {
        out.push_str(&quoted);
        return;
    }
    out.push_str("$'");
    for c in word.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            c if always_escaped(c) => push_escape(out, c),
            c => out.push(c),
        }
    }
    out.push('\'');
}

#[cfg(test)]
mod tests;
