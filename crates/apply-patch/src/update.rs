//! Applying the chunks of an `*** Update File:` hunk to a file's text.
//!
//! Every chunk is located by a forward search from where the previous one
//! ended, and the new text is assembled in a single pass at the end, so a
//! patch with many chunks costs one scan of the file, not one per chunk.

use std::path::Path;

use crate::error::ApplyError;
use crate::parser::UpdateChunk;

/// How strictly a patch line must equal a file line; tried in this order so
/// that an exact match anywhere wins over a loose match earlier in the file.
const TIERS: [fn(&str, &str) -> bool; 3] = [
    |file, patch| file == patch,
    |file, patch| file.trim_end() == patch.trim_end(),
    |file, patch| file.trim() == patch.trim(),
];

/// Returns `old` with `chunks` applied. `display` names the file in errors.
///
/// The file keeps its line-ending convention: CRLF files stay CRLF, and a file
/// without a final newline still lacks one afterwards.
pub(crate) fn apply_chunks(
    old: &str,
    chunks: &[UpdateChunk],
    display: &Path,
) -> Result<String, ApplyError> {
    let crlf = old.find('\n').is_some_and(|i| old[..i].ends_with('\r'));
    let mut lines: Vec<&str> = old.split('\n').collect();
    let ends_with_newline = old.is_empty() || old.ends_with('\n');
    if ends_with_newline {
        lines.pop();
    }
    if crlf {
        for line in &mut lines {
            *line = line.strip_suffix('\r').unwrap_or(line);
        }
    }

    let mut edits: Vec<Edit<'_>> = Vec::with_capacity(chunks.len());
    let mut cursor = 0;
    for (index, chunk) in chunks.iter().enumerate() {
        let position = ChunkPosition {
            display,
            index,
            total: chunks.len(),
        };
        let edit = locate(&lines, chunk, cursor, &position)?;
        cursor = edit.start + edit.old_len;
        edits.push(edit);
    }

    let newline = if crlf { "\r\n" } else { "\n" };
    let mut out = String::with_capacity(old.len() + 64 * chunks.len());
    let mut next = 0;
    let mut first = true;
    let mut push = |out: &mut String, line: &str| {
        if !first {
            out.push_str(newline);
        }
        first = false;
        out.push_str(line);
    };
    for edit in &edits {
        for line in &lines[next..edit.start] {
            push(&mut out, line);
        }
        for line in edit.new_lines {
            push(&mut out, line);
        }
        next = edit.start + edit.old_len;
    }
    for line in &lines[next..] {
        push(&mut out, line);
    }
    if ends_with_newline && !first {
        out.push_str(newline);
    }
    Ok(out)
}

/// Replace `old_len` lines at `start` with `new_lines`.
struct Edit<'c> {
    start: usize,
    old_len: usize,
    new_lines: &'c [String],
}

/// Which chunk is being located, for error messages.
struct ChunkPosition<'p> {
    display: &'p Path,
    index: usize,
    total: usize,
}

fn locate<'c>(
    lines: &[&str],
    chunk: &'c UpdateChunk,
    mut cursor: usize,
    position: &ChunkPosition<'_>,
) -> Result<Edit<'c>, ApplyError> {
    let mut anchor = None;
    for context in &chunk.context {
        let found = seek(lines, std::slice::from_ref(context), cursor, false).ok_or_else(|| {
            ApplyError::ContextNotFound {
                path: position.display.to_path_buf(),
                context: context.clone(),
                chunk: position.index + 1,
                total: position.total,
            }
        })?;
        anchor = Some(found);
        cursor = found + 1;
    }

    if chunk.old_lines.is_empty() {
        // Pure insertion: after the `@@` anchor if there is one, otherwise
        // (as Codex does) at the end of the file.
        let start = if anchor.is_none() || chunk.is_end_of_file {
            lines.len()
        } else {
            cursor
        };
        return Ok(Edit {
            start,
            old_len: 0,
            new_lines: &chunk.new_lines,
        });
    }

    // Models often repeat the `@@` line as the chunk's first context line, so
    // a chunk may also start on the anchor itself.
    let starts = [Some(cursor), anchor];
    for start in starts.into_iter().flatten() {
        if let Some(edit) = find_edit(lines, chunk, start) {
            return Ok(edit);
        }
    }
    let earlier = !chunk.is_end_of_file && cursor > 0 && find_edit(lines, chunk, 0).is_some();
    Err(ApplyError::LinesNotFound {
        path: position.display.to_path_buf(),
        chunk: position.index + 1,
        total: position.total,
        lines: chunk.old_lines.clone(),
        at_end: chunk.is_end_of_file,
        out_of_order: earlier,
    })
}

/// The chunk's old lines located at or after `start`, as an edit.
fn find_edit<'c>(lines: &[&str], chunk: &'c UpdateChunk, start: usize) -> Option<Edit<'c>> {
    let (mut old, mut new) = (&chunk.old_lines[..], &chunk.new_lines[..]);
    loop {
        if let Some(at) = seek(lines, old, start, chunk.is_end_of_file) {
            return Some(Edit {
                start: at,
                old_len: old.len(),
                new_lines: new,
            });
        }
        // A trailing blank context line usually stands for the final newline,
        // which is not a line of its own once the file is split.
        match (old, new) {
            ([old_rest @ .., last_old], [new_rest @ .., last_new])
                if last_old.is_empty() && last_new.is_empty() && !old_rest.is_empty() =>
            {
                (old, new) = (old_rest, new_rest);
            }
            _ => return None,
        }
    }
}

/// Index at or after `start` where `pattern` matches `lines`, trying each
/// tier over the whole range before loosening. With `at_end`, only a match
/// ending at the last line counts.
fn seek(lines: &[&str], pattern: &[String], start: usize, at_end: bool) -> Option<usize> {
    if pattern.len() > lines.len() {
        return None;
    }
    let last_start = lines.len() - pattern.len();
    if start > last_start {
        return None;
    }
    let candidates = if at_end {
        last_start..last_start + 1
    } else {
        start..last_start + 1
    };
    TIERS.iter().find_map(|matches| {
        candidates.clone().find(|&at| {
            lines[at..at + pattern.len()]
                .iter()
                .zip(pattern)
                .all(|(file, patch)| matches(file, patch))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|l| (*l).to_owned()).collect()
    }

    #[test]
    fn exact_match_later_beats_loose_match_earlier() {
        let lines = ["foo  ", "x", "foo"];
        assert_eq!(seek(&lines, &strings(&["foo"]), 0, false), Some(2));
    }

    #[test]
    fn trailing_whitespace_tier_matches_when_exact_fails() {
        let lines = ["a", "foo  \t", "b"];
        assert_eq!(seek(&lines, &strings(&["foo"]), 0, false), Some(1));
    }

    #[test]
    fn surrounding_whitespace_tier_matches_reindented_lines() {
        let lines = ["a", "    foo()", "\tbar()"];
        assert_eq!(
            seek(&lines, &strings(&["foo()", "  bar()"]), 0, false),
            Some(1)
        );
    }

    #[test]
    fn search_starts_at_the_cursor() {
        let lines = ["x", "y", "x"];
        assert_eq!(seek(&lines, &strings(&["x"]), 1, false), Some(2));
        assert_eq!(seek(&lines, &strings(&["y"]), 2, false), None);
    }

    #[test]
    fn end_of_file_match_only_counts_at_the_end() {
        let lines = ["x", "y", "x"];
        assert_eq!(seek(&lines, &strings(&["x"]), 0, true), Some(2));
        assert_eq!(seek(&lines, &strings(&["y"]), 0, true), None);
    }

    #[test]
    fn pattern_longer_than_file_is_not_found() {
        assert_eq!(seek(&["a"], &strings(&["a", "b"]), 0, false), None);
    }
}
