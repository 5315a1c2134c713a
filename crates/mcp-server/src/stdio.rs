//! The stdio relay between the real stdin/stdout and rmcp.
//!
//! rmcp silently drops lines that are not JSON, and answers a request it
//! cannot parse with an error that lacks the request's id, which leaves the
//! client waiting. This relay is the one detail handled below rmcp: it answers
//! a line that is not JSON with a parse error (-32700) and a request rmcp could
//! not read with an invalid-request error (-32600) carrying its id, passes
//! everything else on, and owns stdout so that its error lines and rmcp's
//! messages never interleave mid-line.

use rmcp::model::{ClientJsonRpcMessage, ErrorCode};
use serde_json::Value;
use tokio::io::{
    AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const PIPE_CAPACITY: usize = 256 * 1024;
/// How much of rmcp's output is copied to stdout at a time.
const OUTPUT_CHUNK: usize = 64 * 1024;

/// The rmcp side of the relay, plus a token cancelled when stdin reaches EOF.
pub(crate) struct Relay {
    /// What rmcp reads: the client lines the relay did not answer itself.
    pub(crate) server_reader: DuplexStream,
    /// Where rmcp writes: copied to the output as it comes.
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
    let (errors_tx, errors_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let input_closed = CancellationToken::new();

    let closed = input_closed.clone();
    tokio::spawn(async move {
        let mut input = BufReader::new(input);
        let mut raw = Vec::new();
        loop {
            raw.clear();
            // Bytes, not `lines()`: a line that is not UTF-8 must get an error
            // reply, not end the session.
            match input.read_until(b'\n', &mut raw).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let line = match std::str::from_utf8(&raw) {
                Ok(line) => line.trim(),
                Err(err) => {
                    let message = format!("Parse error: the line is not UTF-8 ({err})");
                    let _ =
                        errors_tx.send(error_line(Value::Null, ErrorCode::PARSE_ERROR, message));
                    continue;
                }
            };
            if line.is_empty() {
                continue;
            }
            if let Some(error) = rejection(line) {
                let _ = errors_tx.send(error);
                continue;
            }
            let mut bytes = line.as_bytes().to_vec();
            bytes.push(b'\n');
            if relay_in.write_all(&bytes).await.is_err() {
                break;
            }
        }
        // Closing the pipe tells rmcp the client is gone.
        drop(relay_in);
        closed.cancel();
    });

    let output_done = tokio::spawn(forward_output(relay_out, output, errors_rx));
    Relay {
        server_reader,
        server_writer,
        input_closed,
        output_done,
    }
}

/// Copies rmcp's output to `output` chunk by chunk and slips the relay's own error
/// lines in only between messages. Chunks, not lines: one `exec_command_end` event can
/// carry megabytes of command output, and holding it whole here (plus tokio's copy for
/// the blocking stdout write) used to add two more copies of it to the peak memory.
async fn forward_output(
    mut from: DuplexStream,
    mut output: impl AsyncWrite + Unpin,
    mut errors: mpsc::UnboundedReceiver<Vec<u8>>,
) {
    let mut chunk = vec![0u8; OUTPUT_CHUNK];
    let (mut from_open, mut errors_open) = (true, true);
    // Whether what was written so far ends with a complete line.
    let mut between_lines = true;
    while from_open || errors_open {
        tokio::select! {
            read = from.read(&mut chunk), if from_open => match read {
                Ok(0) | Err(_) => from_open = false,
                Ok(n) => {
                    if output.write_all(&chunk[..n]).await.is_err() {
                        return;
                    }
                    between_lines = chunk[n - 1] == b'\n';
                }
            },
            line = errors.recv(), if errors_open && (between_lines || !from_open) => match line {
                Some(line) => {
                    if output.write_all(&line).await.is_err() {
                        return;
                    }
                }
                None => errors_open = false,
            },
        }
        if output.flush().await.is_err() {
            return;
        }
    }
}

/// The error line answering `line`, when it is not JSON or is a request rmcp
/// cannot read; `None` for lines to pass on.
fn rejection(line: &str) -> Option<Vec<u8>> {
    let value = match serde_json::from_str::<Value>(line) {
        Ok(value) => value,
        Err(err) => {
            tracing::warn!("malformed JSON-RPC line: {err}");
            return Some(error_line(
                Value::Null,
                ErrorCode::PARSE_ERROR,
                format!("Parse error: {err}"),
            ));
        }
    };
    // Only requests wait for an answer; rmcp deals with everything else.
    let id = value
        .get("id")
        .filter(|id| id.is_string() || id.is_number())?;
    value.get("method")?;
    let err = serde_json::from_value::<ClientJsonRpcMessage>(value.clone()).err()?;
    tracing::warn!("invalid JSON-RPC request: {err}");
    Some(error_line(
        id.clone(),
        ErrorCode::INVALID_REQUEST,
        format!("Invalid request: {err}"),
    ))
}

fn error_line(id: Value, code: ErrorCode, message: String) -> Vec<u8> {
    let mut line = serde_json::to_vec(&serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code.0, "message": message},
    }))
    .unwrap_or_default();
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parsed(line: Option<Vec<u8>>) -> Value {
        line.and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or(Value::Null)
    }

    #[test]
    fn lines_that_are_not_json_get_a_parse_error_without_id() {
        let answer = parsed(rejection("{\"jsonrpc\": "));
        assert_eq!(answer["id"], Value::Null);
        assert_eq!(answer["error"]["code"], -32700);
    }

    #[test]
    fn unreadable_requests_get_invalid_request_with_their_id() {
        let line = json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": 5});
        let answer = parsed(rejection(&line.to_string()));
        assert_eq!(answer["id"], 6);
        assert_eq!(answer["error"]["code"], -32600);
    }

    #[tokio::test]
    async fn a_line_that_is_not_utf8_is_answered_and_reading_goes_on() {
        let (mut client, input) = tokio::io::duplex(1024);
        let (output, mut client_out) = tokio::io::duplex(1024);
        let mut relay = start(input, output);
        client
            .write_all(b"\xff\xfe\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n")
            .await
            .unwrap();
        drop(client);

        let mut forwarded = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut relay.server_reader, &mut forwarded)
            .await
            .unwrap();
        assert_eq!(
            forwarded,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n"
        );
        relay.input_closed.cancelled().await;

        drop(relay.server_writer);
        relay.output_done.await.unwrap();
        let mut answered = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut client_out, &mut answered)
            .await
            .unwrap();
        let answer: Value = serde_json::from_str(answered.trim()).unwrap();
        assert_eq!(answer["error"]["code"], -32700);
    }

    #[tokio::test]
    async fn a_large_message_goes_out_whole_and_error_lines_never_split_it() {
        let (mut client, input) = tokio::io::duplex(1024);
        let (output, mut client_out) = tokio::io::duplex(64 * 1024);
        let mut relay = start(input, output);
        let text = "x".repeat(3 * 1024 * 1024);
        let message = json!({"jsonrpc": "2.0", "method": "codex/event", "params": {"text": text}});
        let line = format!("{message}\n");
        let (first, rest) = line.as_bytes().split_at(line.len() / 2);
        let reader = tokio::spawn(async move {
            let mut out = String::new();
            client_out.read_to_string(&mut out).await.map(|_| out)
        });

        relay.server_writer.write_all(first).await.unwrap();
        // A bad line, then a good one: once the good one reached rmcp's side, the
        // error for the bad one is queued while the message is half written.
        client
            .write_all(b"not json\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n")
            .await
            .unwrap();
        let mut forwarded = vec![0u8; 1024];
        let n = relay.server_reader.read(&mut forwarded).await.unwrap();
        assert!(forwarded[..n].ends_with(b"\"ping\"}\n"));
        relay.server_writer.write_all(rest).await.unwrap();
        drop(relay.server_writer);
        drop(client);
        relay.output_done.await.unwrap();

        let out = reader.await.unwrap().unwrap();
        let lines: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or(Value::Null))
            .collect();
        assert_eq!(lines.len(), 2, "two whole lines expected");
        assert!(lines.contains(&message));
        assert!(lines.iter().any(|l| l["error"]["code"] == -32700));
    }

    #[test]
    fn readable_messages_pass_through() {
        for line in [
            json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": "a", "method": "vendor/thing", "params": {}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 0, "result": {}}),
        ] {
            assert_eq!(rejection(&line.to_string()), None, "{line}");
        }
    }
}
