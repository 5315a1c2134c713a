//! The stdio relay between the real stdin/stdout and rmcp.
//!
//! Everything the client writes passes through here before rmcp sees it: lines
//! are read within a size limit, sorted (a line rmcp cannot take is answered or
//! dropped here, see `inbound`), held to the MCP lifecycle (`handshake`), and
//! renumbered where they answer the server's own requests (`request_ids`). Every
//! queue is bounded, and no line is read while the output is backed up, so a
//! client that floods requests without reading answers cannot grow the server.

use rmcp::model::{ClientJsonRpcMessage, ErrorData};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::handshake::{Admission, Handshake};
use crate::inbound::{Inbound, classify, error_line};
use crate::line_reader::{Line, LineReader, MAX_LINE_BYTES};
use crate::output::{self, OutputQueue};
use crate::oversize::answer_oversize;
use crate::request_ids;
use crate::transport::StdioTransport;

/// How many messages may wait for rmcp to take them.
const INBOUND_QUEUE_MESSAGES: usize = 4;

/// The rmcp side of the relay, plus a token cancelled when stdin reaches EOF.
pub(crate) struct Relay {
    /// What rmcp serves on.
    pub(crate) transport: StdioTransport,
    /// Cancelled once the client closed its end of the input (or the output failed).
    pub(crate) input_closed: CancellationToken,
    /// Finishes when everything queued for output has been written out.
    pub(crate) output_done: tokio::task::JoinHandle<()>,
}

/// Starts the relay over any reader and writer (stdin/stdout in production).
pub(crate) fn start(
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin + Send + 'static,
) -> Relay {
    let (output, output_done) = output::start_writer(output);
    let (to_server, from_client) = mpsc::channel(INBOUND_QUEUE_MESSAGES);
    let input_closed = CancellationToken::new();
    let lines = LineReader::new(input, MAX_LINE_BYTES);
    tokio::spawn(relay_input(
        lines,
        to_server,
        output.clone(),
        input_closed.clone(),
    ));
    Relay {
        transport: StdioTransport::new(from_client, output),
        input_closed,
        output_done,
    }
}

/// Where one line from the client goes.
enum Route {
    /// To rmcp.
    Server(Box<ClientJsonRpcMessage>),
    /// Back to the client: the relay's own answer.
    Client(Vec<u8>),
    /// Nowhere (logged where it was decided).
    Nowhere,
}

/// Reads the client's lines until EOF, forwarding what rmcp should see.
async fn relay_input(
    mut lines: LineReader<impl AsyncRead + Unpin>,
    to_server: mpsc::Sender<ClientJsonRpcMessage>,
    output: OutputQueue,
    closed: CancellationToken,
) {
    let mut handshake = Handshake::default();
    // Waiting for room before each line is the backpressure: while the output is
    // backed up, stdin is left unread and the client's writes block.
    while output.wait_for_room().await.is_ok() {
        let line = match lines.next_line().await {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(err) => {
                tracing::warn!("reading stdin failed: {err}");
                break;
            }
        };
        let delivered = match route(line, &mut handshake) {
            Route::Server(message) => to_server.send(*message).await.is_ok(),
            Route::Client(answer) => output.send(answer).await.is_ok(),
            Route::Nowhere => true,
        };
        if !delivered {
            break;
        }
    }
    // Cancelled before rmcp sees the end of input, so that whoever learns of the
    // end from rmcp also finds the token cancelled.
    closed.cancel();
    drop(to_server);
}

/// Decides where `line` goes: sorted, held to the lifecycle, renumbered.
fn route(line: Line, handshake: &mut Handshake) -> Route {
    let inbound = match line {
        Line::Whole(bytes) if bytes.trim_ascii().is_empty() => return Route::Nowhere,
        Line::Whole(bytes) => classify(&bytes),
        Line::Oversize(oversize) => answer_oversize(&oversize, MAX_LINE_BYTES),
    };
    let message = match inbound {
        Inbound::Message(message) => *message,
        Inbound::Answer(answer) => return Route::Client(answer),
        Inbound::Ignore => return Route::Nowhere,
    };
    match handshake.admit(&message) {
        Admission::Pass => {}
        Admission::Refuse(id, why) => {
            let id = serde_json::value::to_raw_value(&id).ok();
            let error = ErrorData::invalid_request(why, None);
            return Route::Client(error_line(id.as_deref(), error));
        }
        Admission::Drop => return Route::Nowhere,
    }
    match request_ids::incoming(message) {
        Some(message) => Route::Server(Box::new(message)),
        None => Route::Nowhere,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::transport::Transport;
    use serde_json::{Value, json};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Everything the relay wrote, as JSON values.
    async fn written(mut client_out: tokio::io::DuplexStream) -> Vec<Value> {
        let mut text = String::new();
        client_out.read_to_string(&mut text).await.unwrap();
        text.lines()
            .map(|line| serde_json::from_str(line).unwrap_or(Value::Null))
            .collect()
    }

    fn initialize(id: i64) -> String {
        let message = json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        }});
        format!("{message}\n")
    }

    #[tokio::test]
    async fn bad_lines_are_answered_and_good_ones_reach_rmcp_in_order() {
        let (mut client, input) = tokio::io::duplex(1024);
        let (output, client_out) = tokio::io::duplex(64 * 1024);
        let mut relay = start(input, output);
        let mut feed = initialize(1).into_bytes();
        feed.extend_from_slice(
            b"\xff\xfe\nnot json\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n",
        );
        client.write_all(&feed).await.unwrap();
        drop(client);

        let mut methods = Vec::new();
        while let Some(message) = relay.transport.receive().await {
            methods.push(serde_json::to_value(message).unwrap()["method"].clone());
        }
        assert_eq!(methods, [json!("initialize"), json!("ping")]);
        relay.input_closed.cancelled().await;
        drop(relay.transport);
        relay.output_done.await.unwrap();
        let answers = written(client_out).await;
        let codes: Vec<&Value> = answers.iter().map(|a| &a["error"]["code"]).collect();
        assert_eq!(codes, [&json!(-32700), &json!(-32700)], "{answers:?}");
    }

    /// What the relay forwards to rmcp and writes back, for `feed` ending in EOF.
    async fn relay_all(feed: String) -> (Vec<Value>, Vec<Value>) {
        let (mut client, input) = tokio::io::duplex(1024);
        let (output, client_out) = tokio::io::duplex(64 * 1024);
        let mut relay = start(input, output);
        client.write_all(feed.as_bytes()).await.unwrap();
        drop(client);
        let mut forwarded = Vec::new();
        while let Some(message) = relay.transport.receive().await {
            forwarded.push(serde_json::to_value(message).unwrap());
        }
        drop(relay.transport);
        relay.output_done.await.unwrap();
        (forwarded, written(client_out).await)
    }

    #[tokio::test]
    async fn replies_to_the_servers_requests_reach_rmcp_renumbered() {
        let mut feed = initialize(1);
        feed.push_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
        let (forwarded, _) = relay_all(feed).await;
        assert_eq!(forwarded.len(), 2, "{forwarded:?}");
        assert_eq!(forwarded[1]["id"], 0, "the reply to wire id 1 is rmcp's 0");
    }

    #[tokio::test]
    async fn requests_out_of_lifecycle_order_are_refused_under_their_id() {
        let mut feed =
            String::from("{\"jsonrpc\":\"2.0\",\"id\":\"early\",\"method\":\"tools/list\"}\n");
        feed.push_str(&initialize(1));
        feed.push_str(&initialize(2));
        let (forwarded, answers) = relay_all(feed).await;
        assert_eq!(forwarded.len(), 1, "{forwarded:?}");
        assert_eq!(forwarded[0]["method"], "initialize");
        assert_eq!(answers[0]["id"], "early");
        assert_eq!(answers[0]["error"]["code"], -32600);
        assert_eq!(answers[1]["id"], 2);
        assert_eq!(
            answers[1]["error"]["message"],
            "initialize called more than once"
        );
    }
}
