//! Reads newline-delimited messages without ever holding more than the line limit.
//!
//! `read_until` cannot be bounded: it returns only at a newline, so a 200 MiB line
//! is in memory before its length can be looked at. Reading through
//! `fill_buf`/`consume` checks the limit before each append; past it, the line is
//! discarded as it streams, keeping only its first and last few KiB so that the
//! request id can still be found and the request answered.

use std::io;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// The longest message accepted: 16 MiB.
///
/// Generous for real use: a million-token context window is about 4 MiB of text,
/// so even a prompt that fills the largest model's context four times over fits —
/// anything longer could not be sent to any model. It is also rmcp's own limit for
/// stdio and SSE, so a message accepted over one transport is accepted over another.
pub(crate) const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// How much of the start and of the end of an oversize line is kept. Clients put
/// the id near one end: first (serde, pydantic) or last (the TypeScript SDK).
pub(crate) const KEPT_EDGE_BYTES: usize = 4 * 1024;

/// How much is read from the input at a time.
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// A line buffer bigger than this is given back after its line, so that one large
/// message does not pin its memory for the rest of the session.
const RETAINED_BUFFER_BYTES: usize = 1024 * 1024;

/// One line of input.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    /// A line within the limit, without its `\n`.
    Whole(Vec<u8>),
    /// A line over the limit, of which only the edges were kept.
    Oversize(OversizeLine),
}

/// What is known of a line that was too long to keep.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct OversizeLine {
    /// Its first [`KEPT_EDGE_BYTES`].
    pub(crate) head: Vec<u8>,
    /// Its last [`KEPT_EDGE_BYTES`] (fewer if less was read past the head), without `\n`.
    pub(crate) tail: Vec<u8>,
    /// Its full length in bytes, without `\n`.
    pub(crate) len: u64,
}

/// A line reader that holds at most `limit` bytes of any line.
pub(crate) struct LineReader<R> {
    input: BufReader<R>,
    limit: usize,
    line: Vec<u8>,
}

/// Where the current line stands.
enum Progress {
    /// Still within the limit; its bytes are in `line`.
    Kept,
    /// Over the limit: its head is kept, the rest streams past.
    Discarding(OversizeLine),
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// A reader of `input` accepting lines up to `limit` bytes.
    pub(crate) fn new(input: R, limit: usize) -> Self {
        Self {
            input: BufReader::with_capacity(READ_BUFFER_BYTES, input),
            limit,
            line: Vec::new(),
        }
    }

    /// The next line; `None` at end of input. A last line without `\n` still counts.
    pub(crate) async fn next_line(&mut self) -> io::Result<Option<Line>> {
        self.line.clear();
        if self.line.capacity() > RETAINED_BUFFER_BYTES {
            self.line = Vec::new();
        }
        let mut progress = Progress::Kept;
        loop {
            let available = self.input.fill_buf().await?;
            if available.is_empty() {
                return Ok(match progress {
                    Progress::Kept if self.line.is_empty() => None,
                    Progress::Kept => Some(Line::Whole(std::mem::take(&mut self.line))),
                    Progress::Discarding(oversize) => Some(Line::Oversize(oversize)),
                });
            }
            let newline = newline_position(available);
            let data = &available[..newline.unwrap_or(available.len())];
            match &mut progress {
                Progress::Kept if self.line.len() + data.len() <= self.limit => {
                    reserve_within(&mut self.line, data.len(), self.limit);
                    self.line.extend_from_slice(data);
                }
                Progress::Kept => {
                    let len = (self.line.len() + data.len()) as u64;
                    let mut head = std::mem::take(&mut self.line);
                    let mut tail = Vec::new();
                    keep_tail(
                        &mut tail,
                        &head[head.len().saturating_sub(KEPT_EDGE_BYTES)..],
                    );
                    keep_tail(&mut tail, data);
                    // Extending only a short head: a full one has its capacity at the
                    // limit, and growing it would reserve twice that.
                    if head.len() < KEPT_EDGE_BYTES {
                        let missing = (KEPT_EDGE_BYTES - head.len()).min(data.len());
                        head.extend_from_slice(&data[..missing]);
                    }
                    head.truncate(KEPT_EDGE_BYTES);
                    head.shrink_to_fit();
                    progress = Progress::Discarding(OversizeLine { head, tail, len });
                }
                Progress::Discarding(oversize) => {
                    oversize.len += data.len() as u64;
                    // The limit may have been crossed in a short read: the head still
                    // fills up to its size from what follows.
                    if oversize.head.len() < KEPT_EDGE_BYTES {
                        let missing = (KEPT_EDGE_BYTES - oversize.head.len()).min(data.len());
                        oversize.head.extend_from_slice(&data[..missing]);
                    }
                    keep_tail(&mut oversize.tail, data);
                }
            }
            let consumed = newline.map_or(available.len(), |at| at + 1);
            self.input.consume(consumed);
            if newline.is_some() {
                return Ok(Some(match progress {
                    Progress::Kept => Line::Whole(std::mem::take(&mut self.line)),
                    Progress::Discarding(oversize) => Line::Oversize(oversize),
                }));
            }
        }
    }
}

/// Position of the first `\n`.
fn newline_position(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

/// Makes room for `more` bytes without letting the capacity pass `limit` (plain
/// `extend` doubles, which could reserve twice the limit).
fn reserve_within(line: &mut Vec<u8>, more: usize, limit: usize) {
    let needed = line.len() + more;
    if needed > line.capacity() {
        let target = needed.max(line.capacity() * 2).min(limit).max(needed);
        line.reserve_exact(target - line.len());
    }
}

/// Appends `data` to `tail`, keeping only the last [`KEPT_EDGE_BYTES`].
fn keep_tail(tail: &mut Vec<u8>, data: &[u8]) {
    if data.len() >= KEPT_EDGE_BYTES {
        tail.clear();
        tail.extend_from_slice(&data[data.len() - KEPT_EDGE_BYTES..]);
        return;
    }
    let overflow = (tail.len() + data.len()).saturating_sub(KEPT_EDGE_BYTES);
    tail.drain(..overflow);
    tail.extend_from_slice(data);
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    async fn lines_of(input: &[u8], limit: usize) -> Vec<Line> {
        let mut reader = LineReader::new(input, limit);
        let mut lines = Vec::new();
        while let Some(line) = reader.next_line().await.unwrap() {
            lines.push(line);
        }
        lines
    }

    #[tokio::test]
    async fn lines_within_the_limit_come_whole_and_a_last_unterminated_one_counts() {
        let lines = lines_of(b"one\n\ntwo\nthree", 8).await;
        assert_eq!(
            lines,
            vec![
                Line::Whole(b"one".to_vec()),
                Line::Whole(Vec::new()),
                Line::Whole(b"two".to_vec()),
                Line::Whole(b"three".to_vec()),
            ]
        );
    }

    #[tokio::test]
    async fn a_line_over_the_limit_keeps_its_edges_and_the_next_line_is_intact() {
        let long: Vec<u8> = (0..20_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let mut input = long.clone();
        input.extend_from_slice(b"\nnext\n");
        let lines = lines_of(&input, 10_000).await;
        assert_eq!(
            lines,
            vec![
                Line::Oversize(OversizeLine {
                    head: long[..KEPT_EDGE_BYTES].to_vec(),
                    tail: long[long.len() - KEPT_EDGE_BYTES..].to_vec(),
                    len: long.len() as u64,
                }),
                Line::Whole(b"next".to_vec()),
            ]
        );
    }

    #[tokio::test]
    async fn a_line_crossing_the_limit_in_a_short_read_still_keeps_its_whole_head() {
        let (mut writer, input) = tokio::io::duplex(64);
        let long: Vec<u8> = (0..10_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let feed = {
            let long = long.clone();
            tokio::spawn(async move {
                // Three bytes, the limit crossed by the next piece, the rest later.
                writer.write_all(&long[..3]).await.unwrap();
                writer.flush().await.unwrap();
                tokio::task::yield_now().await;
                writer.write_all(&long[3..]).await.unwrap();
                writer.write_all(b"\n").await.unwrap();
            })
        };
        let mut reader = LineReader::new(input, 5);
        let Some(Line::Oversize(oversize)) = reader.next_line().await.unwrap() else {
            panic!("expected an oversize line");
        };
        feed.await.unwrap();
        assert_eq!(oversize.head, long[..KEPT_EDGE_BYTES]);
        assert_eq!(oversize.len, 10_000);
    }

    #[tokio::test]
    async fn a_line_just_over_the_limit_keeps_what_it_has() {
        let lines = lines_of(b"abcdefghi\n", 8).await;
        assert_eq!(
            lines,
            vec![Line::Oversize(OversizeLine {
                head: b"abcdefghi".to_vec(),
                tail: b"abcdefghi".to_vec(),
                len: 9,
            })]
        );
    }

    #[tokio::test]
    async fn a_huge_line_streaming_in_small_writes_never_grows_the_buffer_past_the_limit() {
        let (mut writer, input) = tokio::io::duplex(1024);
        let feed = tokio::spawn(async move {
            let chunk = vec![b'x'; 1000];
            for _ in 0..5_000 {
                writer.write_all(&chunk).await.unwrap();
            }
            writer.write_all(b"END\nok\n").await.unwrap();
        });
        let mut reader = LineReader::new(input, 100_000);
        let Some(Line::Oversize(oversize)) = reader.next_line().await.unwrap() else {
            panic!("expected an oversize line");
        };
        assert_eq!(oversize.len, 5_000_003);
        assert!(oversize.tail.ends_with(b"xEND"));
        assert!(
            reader.line.capacity() <= 100_000,
            "{}",
            reader.line.capacity()
        );
        assert_eq!(
            reader.next_line().await.unwrap(),
            Some(Line::Whole(b"ok".to_vec()))
        );
        feed.await.unwrap();
    }
}
