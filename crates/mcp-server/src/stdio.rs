//! The stdio relay between the real stdin/stdout and rmcp.
//!
//! rmcp silently drops lines that are not JSON; MCP clients deserve a
//! JSON-RPC parse error (-32700) instead. This relay is the one detail
//! handled below rmcp: it checks that each line is JSON before passing it on,
//! answers the ones that are not, and owns stdout so that its error lines and
//! rmcp's messages never interleave mid-line.

use serde::de::IgnoredAny;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const PIPE_CAPACITY: usize = 256 * 1024;

/// The rmcp side of the relay, plus a token cancelled when stdin reaches EOF.
pub(crate) struct Relay {
    /// What rmcp reads: client lines that parsed as JSON.
    pub(crate) server_reader: DuplexStream,
    /// Where rmcp writes: forwarded to the output line by line.
    pub(crate) server_writer: DuplexStream,
    /// Cancelled once the client closed its end of the input.
    pub(crate) input_closed: CancellationToken,
    /// Finishes when rmcp's output has all been written out.
    pub(crate) output_done: tokio::task::JoinHandle<()>,
}

/// Starts the relay over any reader and writer (stdin/stdout in production).
pub(crate) fn start(
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin + Send + 'static,
) -> Relay {
    let (mut relay_in, server_reader) = tokio::io::duplex(PIPE_CAPACITY);
    let (server_writer, relay_out) = tokio::io::duplex(PIPE_CAPACITY);
    let (lines_tx, lines_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let input_closed = CancellationToken::new();

    let errors_tx = lines_tx.clone();
    let closed = input_closed.clone();
    tokio::spawn(async move {
        let mut lines = BufReader::new(input).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let trimmed = line.trim();
            if trimmed.is_empty() {
                continue;
            }
            match serde_json::from_str::<IgnoredAny>(trimmed) {
                Ok(_) => {
                    let mut bytes = trimmed.as_bytes().to_vec();
                    bytes.push(b'\n');
                    if relay_in.write_all(&bytes).await.is_err() {
                        break;
                    }
                }
                Err(err) => {
                    tracing::warn!("malformed JSON-RPC line: {err}");
                    let _ = errors_tx.send(parse_error_line(&err));
                }
            }
        }
        // Closing the pipe tells rmcp the client is gone.
        drop(relay_in);
        closed.cancel();
    });

    let output_done = tokio::spawn(async move {
        let forward = async move {
            let mut reader = BufReader::new(relay_out);
            loop {
                let mut line = Vec::new();
                match reader.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if lines_tx.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        };
        tokio::join!(forward, write_lines(output, lines_rx));
    });
    Relay {
        server_reader,
        server_writer,
        input_closed,
        output_done,
    }
}

async fn write_lines(
    mut output: impl AsyncWrite + Unpin,
    mut lines: mpsc::UnboundedReceiver<Vec<u8>>,
) {
    while let Some(line) = lines.recv().await {
        if output.write_all(&line).await.is_err() {
            return;
        }
        // Batch whatever else is ready, then flush once.
        while let Ok(more) = lines.try_recv() {
            if output.write_all(&more).await.is_err() {
                return;
            }
        }
        if output.flush().await.is_err() {
            return;
        }
    }
}

fn parse_error_line(err: &serde_json::Error) -> Vec<u8> {
    let mut line = serde_json::to_vec(&serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32700, "message": format!("Parse error: {err}")},
    }))
    .unwrap_or_default();
    line.push(b'\n');
    line
}
