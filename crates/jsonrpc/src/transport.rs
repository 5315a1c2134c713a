//! A connection's message transport: frames in (lines on a byte stream, or WebSocket
//! messages), one bounded output queue out. Whatever carries them, a front door sees
//! the same two halves.

use std::io;
use std::pin::Pin;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinHandle;

use crate::frame::Frame;
use crate::line_reader::LineReader;
use crate::output::{OutputQueue, QueueBounds, start_line_writer};
use crate::websocket;

/// How much one connection may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The longest message taken in, in bytes; a longer one is answered, not held.
    pub max_message_bytes: usize,
    /// What may wait to be written.
    pub queue: QueueBounds,
}

/// Both halves of one connection.
#[derive(Debug)]
pub struct MessageTransport {
    /// The peer's messages.
    pub input: FrameReader,
    /// Where messages for the peer are queued.
    pub output: OutputQueue,
    /// The writer; it finishes once every [`OutputQueue`] handle is dropped and the
    /// queue is written out, or when the output fails.
    pub writer: JoinHandle<()>,
}

impl MessageTransport {
    /// Newline-delimited messages on the process's stdin and stdout (see [`crate::stdio`]).
    pub fn stdio(limits: Limits) -> Self {
        Self::lines(crate::stdio::stdin(), crate::stdio::stdout(), limits)
    }

    /// Newline-delimited messages on a byte stream.
    pub fn lines(
        input: impl AsyncRead + Send + 'static,
        output: impl AsyncWrite + Unpin + Send + 'static,
        limits: Limits,
    ) -> Self {
        let (output, writer) = start_line_writer(output, limits.queue);
        let input: Pin<Box<dyn AsyncRead + Send>> = Box::pin(input);
        Self {
            input: FrameReader(Reader::Lines(LineReader::new(
                input,
                limits.max_message_bytes,
            ))),
            output,
            writer,
        }
    }

    /// One message per frame on an accepted WebSocket (see [`websocket::accept`]).
    pub(crate) fn websocket(
        reader: websocket::Reader,
        output: OutputQueue,
        writer: JoinHandle<()>,
    ) -> Self {
        Self {
            input: FrameReader(Reader::WebSocket(reader)),
            output,
            writer,
        }
    }
}

/// The reading half of a [`MessageTransport`].
#[derive(Debug)]
pub struct FrameReader(Reader);

enum Reader {
    Lines(LineReader<Pin<Box<dyn AsyncRead + Send>>>),
    WebSocket(websocket::Reader),
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Lines(_) => f.write_str("Lines"),
            Self::WebSocket(_) => f.write_str("WebSocket"),
        }
    }
}

impl FrameReader {
    /// The peer's next message, blank lines skipped; `None` once the peer has finished.
    pub async fn next(&mut self) -> io::Result<Option<Frame>> {
        loop {
            let frame = match &mut self.0 {
                Reader::Lines(lines) => lines.next_line().await?,
                Reader::WebSocket(frames) => frames.next().await?,
            };
            match frame {
                Some(Frame::Whole(bytes)) if bytes.trim_ascii().is_empty() => {}
                other => return Ok(other),
            }
        }
    }
}

/// Newline-delimited frames from a byte stream, outside a [`MessageTransport`] (for a
/// reader whose output is handled elsewhere).
pub fn line_frames(input: impl AsyncRead + Send + 'static, limit: usize) -> FrameReader {
    let input: Pin<Box<dyn AsyncRead + Send>> = Box::pin(input);
    FrameReader(Reader::Lines(LineReader::new(input, limit)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn lines_in_are_frames_and_blank_lines_are_skipped() {
        let limits = Limits {
            max_message_bytes: 8,
            queue: QueueBounds {
                messages: 4,
                bytes: 1024,
            },
        };
        let (peer_out, output) = tokio::io::duplex(1024);
        let mut transport =
            MessageTransport::lines(&b"one\n \r\n\ntoo long line\ntwo"[..], output, limits);
        assert_eq!(
            transport.input.next().await.unwrap(),
            Some(Frame::Whole(b"one".to_vec()))
        );
        assert!(matches!(
            transport.input.next().await.unwrap(),
            Some(Frame::Oversize(_))
        ));
        assert_eq!(
            transport.input.next().await.unwrap(),
            Some(Frame::Whole(b"two".to_vec()))
        );
        assert_eq!(transport.input.next().await.unwrap(), None);
        transport.output.send("{}".into()).await.unwrap();
        drop(transport.output);
        transport.writer.await.unwrap();
        let mut written = String::new();
        let mut peer_out = peer_out;
        peer_out.read_to_string(&mut written).await.unwrap();
        assert_eq!(written, "{}\n");
    }
}
