//! Stdio framing, bounded both ways: one JSON message per line in, at most
//! [`MAX_LINE_BYTES`] each (a longer line is dropped as it streams in, never held, and
//! answered with an error); one message per line out, from a bounded queue.

use std::io;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::outgoing::QueuedLine;

/// The longest input line taken, in bytes (the newline excluded).
pub(crate) const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// One input line.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    /// A line within the limit, without its newline.
    Message(Vec<u8>),
    /// A line over the limit, dropped; how long it was.
    TooLong(usize),
}

/// Reads lines of at most `max` bytes from `input`.
pub(crate) struct LineReader<R> {
    input: R,
    max: usize,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    /// A reader taking lines of at most `max` bytes.
    pub(crate) fn new(input: R, max: usize) -> Self {
        Self { input, max }
    }

    /// The next non-empty line; `None` at end of input.
    pub(crate) async fn next_line(&mut self) -> io::Result<Option<Line>> {
        loop {
            match self.read_line().await? {
                Some(Line::Message(bytes)) if bytes.iter().all(u8::is_ascii_whitespace) => {}
                other => return Ok(other),
            }
        }
    }

    async fn read_line(&mut self) -> io::Result<Option<Line>> {
        let mut line = Vec::new();
        // Bytes of an over-long line seen so far; 0 while the line is within the limit.
        let mut dropped = 0usize;
        let mut seen_any = false;
        loop {
            let buf = self.input.fill_buf().await?;
            if buf.is_empty() {
                if !seen_any {
                    return Ok(None);
                }
                break;
            }
            seen_any = true;
            let (taken, ends_line) = match buf.iter().position(|&b| b == b'\n') {
                Some(at) => (at, true),
                None => (buf.len(), false),
            };
            if dropped == 0 && line.len() + taken <= self.max {
                line.extend_from_slice(&buf[..taken]);
            } else {
                dropped += line.len() + taken;
                line = Vec::new();
            }
            self.input.consume(taken + usize::from(ends_line));
            if ends_line {
                break;
            }
        }
        if dropped > 0 {
            return Ok(Some(Line::TooLong(dropped)));
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        Ok(Some(Line::Message(line)))
    }
}

/// Writes every queued line (JSON, newline excluded) to `output`, until the queue closes
/// (every sender gone) or the output fails. A line's share of the queue's byte budget is
/// released once it is written.
pub(crate) async fn write_messages(
    mut output: impl AsyncWrite + Unpin,
    mut lines: mpsc::Receiver<QueuedLine>,
) {
    while let Some(queued) = lines.recv().await {
        let mut bytes = queued.line.into_bytes();
        bytes.push(b'\n');
        if output.write_all(&bytes).await.is_err() {
            return;
        }
        // Flush once the queue is drained, not after every message of a burst.
        if lines.is_empty() && output.flush().await.is_err() {
            return;
        }
    }
    let _ = output.flush().await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::BufReader;

    async fn lines(input: &[u8], max: usize) -> Vec<Line> {
        let mut reader = LineReader::new(BufReader::with_capacity(4, input), max);
        let mut out = Vec::new();
        while let Some(line) = reader.next_line().await.unwrap() {
            out.push(line);
        }
        out
    }

    #[tokio::test]
    async fn lines_are_split_on_newlines_and_blank_ones_skipped() {
        assert_eq!(
            lines(b"{\"a\":1}\n\n  \n{\"b\":2}\r\n{\"c\":3}", 64).await,
            [
                Line::Message(b"{\"a\":1}".to_vec()),
                Line::Message(b"{\"b\":2}".to_vec()),
                Line::Message(b"{\"c\":3}".to_vec()),
            ]
        );
    }

    #[tokio::test]
    async fn an_over_long_line_is_reported_with_its_length_and_reading_goes_on() {
        let long = "x".repeat(40);
        let input = format!("{long}\nok\n{long}");
        assert_eq!(
            lines(input.as_bytes(), 10).await,
            [
                Line::TooLong(40),
                Line::Message(b"ok".to_vec()),
                Line::TooLong(40)
            ]
        );
    }

    #[tokio::test]
    async fn queued_lines_go_out_one_per_line_and_free_their_budget() {
        let (outgoing, rx) = crate::outgoing::Outgoing::new(4, 64);
        let long = crate::protocol::JsonRpcError::invalid_request("x".repeat(40));
        outgoing.error(None, long.clone()).await;
        let writer = tokio::spawn(async move {
            let mut out = Vec::new();
            write_messages(&mut out, rx).await;
            out
        });
        // Over half the budget each: the second waits until the writer took the first.
        outgoing.error(None, long).await;
        drop(outgoing);
        let out = String::from_utf8(writer.await.unwrap()).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2, "{out}");
        assert!(lines[0].starts_with("{\"id\":null,\"error\":{\"code\":-32600"));
    }
}
