//! Reads newline-delimited messages without ever holding more than the limit of one.
//!
//! `read_until` cannot be bounded: it returns only at a newline, so a 200 MiB line is
//! in memory before its length can be looked at. Reading through `fill_buf`/`consume`
//! hands each piece to a [`Collector`], which checks the limit before each append;
//! past it, the line is discarded as it streams, keeping only its edges.

use std::io;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

use crate::frame::{Collector, Frame};

/// How much is read from the input at a time.
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// A line reader that holds at most `limit` bytes of any line.
pub struct LineReader<R> {
    input: BufReader<R>,
    line: Collector,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// A reader of `input` accepting lines up to `limit` bytes.
    pub fn new(input: R, limit: usize) -> Self {
        Self {
            input: BufReader::with_capacity(READ_BUFFER_BYTES, input),
            line: Collector::new(limit),
        }
    }

    /// The next line, without its `\n` (blank lines included); `None` at end of
    /// input. A last line without `\n` still counts.
    pub async fn next_line(&mut self) -> io::Result<Option<Frame>> {
        loop {
            let available = self.input.fill_buf().await?;
            if available.is_empty() {
                return Ok((!self.line.is_empty()).then(|| self.line.finish()));
            }
            let newline = available.iter().position(|&b| b == b'\n');
            self.line
                .push(&available[..newline.unwrap_or(available.len())]);
            let consumed = newline.map_or(available.len(), |at| at + 1);
            self.input.consume(consumed);
            if newline.is_some() {
                return Ok(Some(self.line.finish()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{KEPT_EDGE_BYTES, Oversize};
    use tokio::io::AsyncWriteExt;

    async fn lines_of(input: &[u8], limit: usize) -> Vec<Frame> {
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
                Frame::Whole(b"one".to_vec()),
                Frame::Whole(Vec::new()),
                Frame::Whole(b"two".to_vec()),
                Frame::Whole(b"three".to_vec()),
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
                Frame::Oversize(Oversize {
                    head: long[..KEPT_EDGE_BYTES].to_vec(),
                    tail: long[long.len() - KEPT_EDGE_BYTES..].to_vec(),
                    len: long.len() as u64,
                }),
                Frame::Whole(b"next".to_vec()),
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
        let Some(Frame::Oversize(oversize)) = reader.next_line().await.unwrap() else {
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
            vec![Frame::Oversize(Oversize {
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
        let Some(Frame::Oversize(oversize)) = reader.next_line().await.unwrap() else {
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
            Some(Frame::Whole(b"ok".to_vec()))
        );
        feed.await.unwrap();
    }
}
