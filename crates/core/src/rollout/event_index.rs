//! Where a rollout's event lines are, so that a replay reads them and not the history
//! items, turn contexts and metadata between them, and decodes them together.
//!
//! The recorder keeps the index of the file it writes as it writes it; resuming a thread
//! builds it while reading the whole file anyway. A replay checks the file against it as
//! it reads (each run must be whole lines) and reads a stretch line by line where it is
//! not: an index that no longer matches its file costs time, never events.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::ops::Range;

/// The most bytes one entry of an [`EventIndex`] spans: a longer run of event lines is
/// cut at a line's start, so that a replay can share it out between its threads.
const MAX_RUN_BYTES: u64 = 64 << 10;

/// Between two runs, the most bytes read and dropped rather than skipped with a seek of
/// their own (a read costs more than copying a few kilobytes from the page cache).
const GAP_READ_BYTES: u64 = 16 << 10;

/// The most bytes read at once.
const READ_BYTES: u64 = 1 << 20;

/// The event lines of a rollout's first `covered` bytes: runs of
/// consecutive whole lines (newlines included), in file order. Every line there that may
/// hold an event — an `event` line, or a line written some other way that decodes as one —
/// is in a run; what no run holds has none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct EventIndex {
    runs: Vec<Range<u64>>,
    covered: u64,
}

/// What one chunk of a replay reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Chunk {
    /// The event lines of these runs of the index, which are those that start in `bytes`
    /// (the chunks of runs share the bytes they cover out between them, without a gap).
    Runs {
        runs: Range<usize>,
        bytes: Range<u64>,
    },
    /// The lines that start in these bytes, which the index does not cover.
    Lines(Range<u64>),
}

impl EventIndex {
    /// An index of a file whose first `len` bytes hold no event.
    pub(crate) fn without_events(len: u64) -> Self {
        Self {
            runs: Vec::new(),
            covered: len,
        }
    }

    /// Adds the event line at `line` (newline included), which starts at or after the
    /// bytes covered so far; what lies between holds no event.
    pub(crate) fn event_line(&mut self, line: Range<u64>) {
        match self.runs.last_mut() {
            Some(run) if run.end == line.start && line.end - run.start <= MAX_RUN_BYTES => {
                run.end = line.end;
            }
            _ => self.runs.push(line.clone()),
        }
        self.cover(line.end);
    }

    /// Counts the file's first `len` bytes as indexed: what no run holds has no event.
    pub(crate) fn cover(&mut self, len: u64) {
        self.covered = self.covered.max(len);
    }

    /// The runs of event lines.
    pub(crate) fn runs(&self) -> &[Range<u64>] {
        &self.runs
    }

    /// Gives back memory the runs no longer need (once an index is built whole).
    pub(crate) fn shrink_to_fit(&mut self) {
        self.runs.shrink_to_fit();
    }

    /// A replay of a file of `len` bytes cut into chunks: runs adding up to about
    /// `chunk_bytes` each, then the bytes the index does not cover, `chunk_bytes` at a time.
    /// A file shorter than the index covers was changed behind its back: it is all read
    /// line by line.
    pub(crate) fn chunks(&self, len: u64, chunk_bytes: u64) -> Vec<Chunk> {
        let chunk_bytes = chunk_bytes.max(1);
        let mut chunks = Vec::new();
        let mut start = 0;
        if self.covered <= len {
            let (mut first, mut bytes) = (0, 0);
            for (i, run) in self.runs.iter().enumerate() {
                bytes += run.end - run.start;
                let last = i + 1 == self.runs.len();
                if bytes >= chunk_bytes || last {
                    let end = if last { self.covered } else { run.end };
                    chunks.push(Chunk::Runs {
                        runs: first..i + 1,
                        bytes: start..end,
                    });
                    (first, bytes, start) = (i + 1, 0, run.end);
                }
            }
            start = self.covered;
        }
        while start < len {
            let end = (start + chunk_bytes).min(len);
            chunks.push(Chunk::Lines(start..end));
            start = end;
        }
        chunks
    }
}

/// Reads the lines of `runs` into `buf` (emptied first), one after the other: runs with
/// little between them are read together and what lies between is dropped. Returns where
/// in `buf` the lines start (after the newline that ends the line before them), or `None`
/// when the file does not hold whole lines there (it was changed behind the index's back).
pub(crate) fn read_runs(
    file: &File,
    runs: &[Range<u64>],
    buf: &mut Vec<u8>,
) -> io::Result<Option<usize>> {
    let mut file = file;
    buf.clear();
    let mut lines_start = None;
    // The runs must be in file order, each after the one before.
    let mut previous_end = 0;
    let mut rest = runs;
    while let Some(first) = rest.first() {
        let mut together = 1;
        while let Some(next) = rest.get(together)
            && next.start.saturating_sub(rest[together - 1].end) <= GAP_READ_BYTES
            && next.end.saturating_sub(first.start) <= READ_BYTES
        {
            together += 1;
        }
        let (stretch, after) = rest.split_at(together);
        rest = after;
        // From the byte before the first line, the newline that ends the line before it,
        // read over the newline `buf` ends with (in a file that matches, the same byte):
        // runs with nothing between them then stay where they are read.
        let from = first.start.saturating_sub(1);
        let to = stretch.last().map_or(from, |run| run.end).max(from);
        buf.pop();
        let at = buf.len();
        file.seek(SeekFrom::Start(from))?;
        if file.take(to - from).read_to_end(buf)? as u64 != to - from {
            return Ok(None); // The file is shorter than the index says.
        }
        // Where each run lies in `buf`: in file order, each starting and ending a line.
        let mut lines = Vec::with_capacity(stretch.len());
        for run in stretch {
            if run.start < previous_end || run.end <= run.start || run.end > to {
                return Ok(None);
            }
            previous_end = run.end;
            let line = at + (run.start - from) as usize..at + (run.end - from) as usize;
            let starts_line = run.start == 0 || buf[line.start - 1] == b'\n';
            if !starts_line || buf[line.end - 1] != b'\n' {
                return Ok(None);
            }
            lines.push(line);
        }
        let mut moved_to = lines.first().map_or(at, |line| line.start);
        lines_start.get_or_insert(moved_to);
        for line in lines {
            let len = line.len();
            if line.start != moved_to {
                buf.copy_within(line, moved_to);
            }
            moved_to += len;
        }
        buf.truncate(moved_to);
    }
    Ok(Some(lines_start.unwrap_or(0)))
}

#[cfg(test)]
mod tests;
