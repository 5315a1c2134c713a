//! Turning patch text into a [`Patch`], with errors that name the line.

use std::path::{Path, PathBuf};

use crate::heredoc::{heredoc_delimiter, strip_command_word};

const BEGIN_PATCH: &str = "*** Begin Patch";
const END_PATCH: &str = "*** End Patch";
const ADD_FILE: &str = "*** Add File:";
const DELETE_FILE: &str = "*** Delete File:";
const UPDATE_FILE: &str = "*** Update File:";
const MOVE_TO: &str = "*** Move to:";
const END_OF_FILE: &str = "*** End of File";
const HUNK_HEADERS: &str = "'*** Add File: ', '*** Delete File: ' or '*** Update File: '";
const HUNK_HEADERS_OR_END: &str =
    "'*** Add File: ', '*** Delete File: ', '*** Update File: ' or '*** End Patch'";

/// A parsed patch: the file operations in the order they were written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// One entry per `*** Add/Delete/Update File:` section.
    pub hunks: Vec<Hunk>,
}

/// One file operation of a patch. Paths are exactly as written in the patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hunk {
    /// Create a file (or overwrite an existing one) with `contents`.
    Add {
        /// Path of the file to create.
        path: PathBuf,
        /// Full contents; every `+` line followed by `\n`.
        contents: String,
    },
    /// Remove a file.
    Delete {
        /// Path of the file to remove.
        path: PathBuf,
    },
    /// Edit a file in place, optionally renaming it.
    Update {
        /// Path of the file to edit.
        path: PathBuf,
        /// New path from `*** Move to:`, if the file is also renamed.
        move_path: Option<PathBuf>,
        /// The edits, in file order.
        chunks: Vec<UpdateChunk>,
    },
}

impl Hunk {
    /// The path the hunk operates on (the source path for a move).
    pub fn path(&self) -> &Path {
        match self {
            Hunk::Add { path, .. } | Hunk::Delete { path } | Hunk::Update { path, .. } => path,
        }
    }
}

/// One edit inside an `*** Update File:` hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateChunk {
    /// Texts of the `@@ text` lines before the edit; each is sought in turn
    /// before `old_lines` are. Empty for a bare `@@` or none at all.
    pub context: Vec<String>,
    /// Lines the file must contain (the ` ` and `-` lines), in order.
    pub old_lines: Vec<String>,
    /// Lines that replace them (the ` ` and `+` lines), in order.
    pub new_lines: Vec<String>,
    /// Set by `*** End of File`: `old_lines` must be the last lines of the file.
    pub is_end_of_file: bool,
}

/// A patch that does not follow the grammar.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ParseError {
    /// 1-based line number in the text given to [`parse_patch`].
    pub line: usize,
    /// What was expected and what was found instead.
    pub message: String,
}

/// Parses patch text in the `*** Begin Patch` format.
///
/// Lenient where models commonly slip: blank lines and surrounding whitespace
/// around the patch or between hunks, CRLF line endings, a wrapping heredoc
/// (`<<'EOF'` … `EOF`, optionally preceded by `apply_patch`), a first chunk
/// without `@@`, a missing blank after `*** Add File:`, and git-style
/// `@@ -1,3 +1,4 @@ heading` lines (the heading, if any, becomes the context).
pub fn parse_patch(text: &str) -> Result<Patch, ParseError> {
    let all: Vec<Line<'_>> = text
        .split('\n')
        .enumerate()
        .map(|(index, raw)| Line {
            number: index + 1,
            text: raw.strip_suffix('\r').unwrap_or(raw),
        })
        .collect();
    let lines = unwrap_heredoc(trim_blank(&all));
    let mut parser = Parser {
        lines,
        pos: 0,
        // A final "\n" ends the last line rather than starting another.
        end_number: (all.len() - usize::from(text.ends_with('\n'))).max(1),
    };
    parser.patch()
}

#[derive(Debug, Clone, Copy)]
struct Line<'a> {
    number: usize,
    text: &'a str,
}

impl Line<'_> {
    fn is_blank(&self) -> bool {
        self.text.trim().is_empty()
    }
}

fn trim_blank<'s, 'a>(lines: &'s [Line<'a>]) -> &'s [Line<'a>] {
    let start = lines
        .iter()
        .position(|l| !l.is_blank())
        .unwrap_or(lines.len());
    let end = lines
        .iter()
        .rposition(|l| !l.is_blank())
        .map_or(start, |i| i + 1);
    &lines[start..end]
}

/// Drops a `<<'EOF'` first line and, when present, its matching last line.
fn unwrap_heredoc<'s, 'a>(lines: &'s [Line<'a>]) -> &'s [Line<'a>] {
    let Some(first) = lines.first() else {
        return lines;
    };
    let opener = first.text.trim();
    let opener = strip_command_word(opener).unwrap_or(opener);
    let Some(word) = heredoc_delimiter(opener) else {
        return lines;
    };
    let body = &lines[1..];
    let body = match body.last() {
        Some(last) if last.text.trim() == word => &body[..body.len() - 1],
        _ => body,
    };
    trim_blank(body)
}

struct Parser<'s, 'a> {
    lines: &'s [Line<'a>],
    pos: usize,
    /// Number of the last line of the whole input, for "end of input" errors.
    end_number: usize,
}

impl<'a> Parser<'_, 'a> {
    fn peek(&self) -> Option<Line<'a>> {
        self.lines.get(self.pos).copied()
    }

    fn advance(&mut self) {
        self.pos += 1;
    }

    fn skip_blank(&mut self) {
        while self.peek().is_some_and(|l| l.is_blank()) {
            self.advance();
        }
    }

    /// An error at the current line: "expected X, found 'Y'".
    fn expected(&self, what: &str) -> ParseError {
        match self.peek() {
            Some(line) => ParseError {
                line: line.number,
                message: format!("expected {what}, found '{}'", shorten(line.text)),
            },
            None => ParseError {
                line: self.end_number,
                message: format!("expected {what}, found end of input"),
            },
        }
    }

    fn patch(&mut self) -> Result<Patch, ParseError> {
        match self.peek() {
            Some(line) if line.text.trim() == BEGIN_PATCH => self.advance(),
            _ => return Err(self.expected(&format!("'{BEGIN_PATCH}'"))),
        }
        let mut hunks = Vec::new();
        loop {
            self.skip_blank();
            let Some(line) = self.peek() else {
                let what = if hunks.is_empty() {
                    HUNK_HEADERS
                } else {
                    HUNK_HEADERS_OR_END
                };
                return Err(self.expected(what));
            };
            if line.text.trim() == END_PATCH {
                if hunks.is_empty() {
                    let mut err = self.expected(HUNK_HEADERS);
                    err.message.push_str(" (a patch needs at least one hunk)");
                    return Err(err);
                }
                self.advance();
                break;
            }
            let hunk = self.hunk(hunks.is_empty())?;
            hunks.push(hunk);
        }
        self.skip_blank();
        if self.peek().is_some() {
            return Err(self.expected(&format!("nothing after '{END_PATCH}'")));
        }
        Ok(Patch { hunks })
    }

    fn hunk(&mut self, first: bool) -> Result<Hunk, ParseError> {
        let Some(line) = self.peek() else {
            return Err(self.expected(HUNK_HEADERS));
        };
        let header = line.text.trim();
        if let Some(path) = header.strip_prefix(ADD_FILE) {
            let path = self.header_path(line, path, ADD_FILE)?;
            self.advance();
            self.add_body(path)
        } else if let Some(path) = header.strip_prefix(DELETE_FILE) {
            let path = self.header_path(line, path, DELETE_FILE)?;
            self.advance();
            Ok(Hunk::Delete { path })
        } else if let Some(path) = header.strip_prefix(UPDATE_FILE) {
            let path = self.header_path(line, path, UPDATE_FILE)?;
            self.advance();
            self.update_body(path)
        } else if first {
            Err(self.expected(HUNK_HEADERS))
        } else {
            Err(self.expected(HUNK_HEADERS_OR_END))
        }
    }

    fn header_path(&self, line: Line<'_>, path: &str, header: &str) -> Result<PathBuf, ParseError> {
        let path = path.trim();
        if path.is_empty() {
            return Err(ParseError {
                line: line.number,
                message: format!("expected a file name after '{header} '"),
            });
        }
        Ok(PathBuf::from(path))
    }

    fn add_body(&mut self, path: PathBuf) -> Result<Hunk, ParseError> {
        let mut contents = String::new();
        let mut count = 0usize;
        while let Some(text) = self.peek().and_then(|l| l.text.strip_prefix('+')) {
            contents.push_str(text);
            contents.push('\n');
            count += 1;
            self.advance();
        }
        if count == 0 {
            let what = format!("a '+' line with the contents of '{}'", path.display());
            return Err(self.expected(&what));
        }
        Ok(Hunk::Add { path, contents })
    }

    fn update_body(&mut self, path: PathBuf) -> Result<Hunk, ParseError> {
        let mut move_path = None;
        if let Some(line) = self.peek()
            && let Some(dest) = line.text.trim().strip_prefix(MOVE_TO)
        {
            move_path = Some(self.header_path(line, dest, MOVE_TO)?);
            self.advance();
        }
        let mut chunks = Vec::new();
        while let Some(line) = self.peek() {
            if self.at_hunk_boundary(line) {
                break;
            }
            chunks.push(self.chunk()?);
        }
        if chunks.is_empty() && move_path.is_none() {
            let what = format!("'@@' or change lines for '{}'", path.display());
            return Err(self.expected(&what));
        }
        Ok(Hunk::Update {
            path,
            move_path,
            chunks,
        })
    }

    /// True at the line after an update hunk's last chunk: a `***` header
    /// (other than `*** End of File`) or blank lines that only lead to one.
    /// Blank lines before a header are spacing between hunks, not context.
    fn at_hunk_boundary(&self, line: Line<'_>) -> bool {
        let is_header = |l: &Line<'_>| l.text.starts_with("***") && l.text.trim() != END_OF_FILE;
        if is_header(&line) {
            return true;
        }
        line.is_blank()
            && self.lines[self.pos..]
                .iter()
                .find(|l| !l.is_blank())
                .is_none_or(is_header)
    }

    fn chunk(&mut self) -> Result<UpdateChunk, ParseError> {
        let mut chunk = UpdateChunk {
            context: Vec::new(),
            old_lines: Vec::new(),
            new_lines: Vec::new(),
            is_end_of_file: false,
        };
        let mut last_header = None;
        while let Some(line) = self.peek()
            && line.text.starts_with("@@")
        {
            if let Some(context) = context_of(line.text) {
                chunk.context.push(context.to_owned());
            }
            last_header = Some(line.text);
            self.advance();
        }
        while let Some(line) = self.peek() {
            let text = line.text;
            if text.starts_with("@@") {
                break;
            }
            if text.trim() == END_OF_FILE {
                chunk.is_end_of_file = true;
                self.advance();
                break;
            }
            if self.at_hunk_boundary(line) {
                break;
            }
            let (marker, rest) = text.split_at(text.chars().next().map_or(0, char::len_utf8));
            match marker {
                "+" => chunk.new_lines.push(rest.to_owned()),
                "-" => chunk.old_lines.push(rest.to_owned()),
                " " | "" => {
                    chunk.old_lines.push(rest.to_owned());
                    chunk.new_lines.push(rest.to_owned());
                }
                _ => return Err(self.expected("a change line starting with ' ', '+' or '-'")),
            }
            self.advance();
        }
        if chunk.old_lines.is_empty() && chunk.new_lines.is_empty() {
            let what = match last_header {
                Some(header) => format!("change lines after '{}'", shorten(header)),
                None => "change lines".to_owned(),
            };
            return Err(self.expected(&what));
        }
        Ok(chunk)
    }
}

/// The text to seek for an `@@` line, if it names any.
fn context_of(header: &str) -> Option<&str> {
    let rest = header.strip_prefix("@@")?.trim();
    if rest.is_empty() {
        return None;
    }
    match strip_git_ranges(rest) {
        Some("") => None,
        Some(heading) => Some(heading),
        None => Some(rest),
    }
}

/// For `-12,7 +12,8 @@ heading` (the tail of a git hunk header) returns
/// `heading`, trimmed; `None` when `text` is not shaped like that.
fn strip_git_ranges(text: &str) -> Option<&str> {
    fn range(text: &str, sign: char) -> Option<&str> {
        let rest = text.strip_prefix(sign)?;
        let digits = rest
            .find(|c: char| !c.is_ascii_digit() && c != ',')
            .unwrap_or(rest.len());
        let (numbers, tail) = rest.split_at(digits);
        let valid = numbers.split(',').count() <= 2 && numbers.split(',').all(|n| !n.is_empty());
        valid.then_some(tail)
    }
    let rest = range(text, '-')?;
    let rest = range(rest.trim_start(), '+')?;
    Some(rest.trim_start().strip_prefix("@@")?.trim())
}

fn shorten(text: &str) -> String {
    const MAX: usize = 80;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_at_line_yields_its_text_as_context() {
        assert_eq!(context_of("@@"), None);
        assert_eq!(context_of("@@ class X"), Some("class X"));
        assert_eq!(context_of("@@   def f():  "), Some("def f():"));
    }

    #[test]
    fn git_hunk_header_yields_only_its_heading() {
        assert_eq!(context_of("@@ -1,3 +1,4 @@"), None);
        assert_eq!(context_of("@@ -1 +1 @@ fn main() {"), Some("fn main() {"));
        assert_eq!(context_of("@@ -x +1 @@"), Some("-x +1 @@"));
    }

    #[test]
    fn long_found_text_is_shortened() {
        let long = "x".repeat(200);
        assert_eq!(shorten(&long).chars().count(), 81);
        assert_eq!(shorten("short"), "short");
    }
}
