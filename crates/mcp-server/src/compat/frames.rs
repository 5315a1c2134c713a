//! What one message from the client is, and the answer when rmcp cannot take it.
//!
//! rmcp drops lines that are not JSON and answers a message it cannot type with an
//! error that lacks the id, which leaves a client waiting and answers notifications,
//! which JSON-RPC forbids. Here every frame (a line on stdio, an HTTP body) is sorted
//! first: a request that cannot be served — unreadable, or over the size limit — is
//! answered under its own id, exactly as the client wrote it, since ids such as
//! `18446744073709551616` do not survive a trip through a float; a notification or
//! response that cannot be read is logged and dropped.

use std::borrow::Cow;

use deputy_jsonrpc::oversize::{OversizeKind, echoable, read_edges, too_large};
use deputy_jsonrpc::{Frame, Oversize};
use rmcp::model::{ClientJsonRpcMessage, ErrorData, JsonRpcVersion2_0, RequestId};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// What becomes of one frame.
#[derive(Debug)]
pub(crate) enum Inbound {
    /// A message for rmcp.
    Message(Box<ClientJsonRpcMessage>),
    /// Answered here: this error message (JSON, no newline) goes back to the client.
    Answer(String),
    /// Nothing to answer (a notification or response that cannot be read); logged.
    Ignore,
}

/// Sorts one frame, blank or not: a whole one by [`classify`], an oversize one by
/// [`answer_oversize`] with the transport's `limit`.
pub(crate) fn sort(frame: &Frame, limit: usize) -> Inbound {
    match frame {
        Frame::Whole(bytes) => classify(bytes),
        Frame::Oversize(oversize) => answer_oversize(oversize, limit),
    }
}

/// Answers a message over the limit: -32600 under its id when the id can be found
/// (`null` otherwise); a response from the client is dropped, never answered.
pub(crate) fn answer_oversize(message: &Oversize, limit: usize) -> Inbound {
    match read_edges(message) {
        OversizeKind::Response => {
            tracing::warn!(
                "dropping a {} byte response, more than the limit of {limit} bytes",
                message.len
            );
            Inbound::Ignore
        }
        OversizeKind::Request(id) => invalid_request(id, too_large(message.len, limit)),
    }
}

/// The top-level fields that tell what kind of message a line is. The id stays raw
/// text so that an answer can echo it byte for byte.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<IgnoredAny>,
    #[serde(default)]
    result: Option<IgnoredAny>,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

/// What a message is, judged by its fields.
enum Kind<'a> {
    Request(&'a RawValue),
    Notification,
    Response,
}

/// Sorts one whole message (a line without its `\n`).
pub(crate) fn classify(line: &[u8]) -> Inbound {
    if let Err(err) = std::str::from_utf8(line) {
        let error =
            ErrorData::parse_error(format!("Parse error: the line is not UTF-8 ({err})"), None);
        tracing::warn!("{}", error.message);
        return Inbound::Answer(error_line(None, error));
    }
    let envelope = match serde_json::from_slice::<Envelope>(line) {
        Ok(envelope) if is_object(line) => envelope,
        // A duplicate field stops the envelope's reading before a syntax error further on.
        Err(err) if err.is_syntax() || err.is_eof() || !is_json(line) => {
            tracing::warn!("malformed JSON-RPC line: {err}");
            let error = ErrorData::parse_error(format!("Parse error: {err}"), None);
            return Inbound::Answer(error_line(None, error));
        }
        _ => return invalid_request(None, "a JSON-RPC message must be a JSON object"),
    };
    let kind = match (envelope.method.is_some(), envelope.id) {
        (true, Some(id)) => Kind::Request(id),
        (true, None) => Kind::Notification,
        (false, _) if envelope.result.is_some() || envelope.error.is_some() => Kind::Response,
        (false, id) => {
            return invalid_request(
                id.filter(|id| echoable(id)),
                "the message has neither `method` nor `result`/`error`",
            );
        }
    };
    if let Kind::Request(id) = kind
        && serde_json::from_str::<RequestId>(id.get()).is_err()
    {
        return invalid_request(
            Some(id).filter(|id| echoable(id)),
            format!(
                "the id must be a string or an integer that fits in 64 bits, not {}",
                id.get()
            ),
        );
    }
    match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        Ok(message) => Inbound::Message(Box::new(message)),
        Err(err) => match kind {
            Kind::Request(id) => {
                invalid_request(Some(id).filter(|id| echoable(id)), err.to_string())
            }
            Kind::Notification => {
                tracing::warn!("dropping a notification that cannot be read: {err}");
                Inbound::Ignore
            }
            Kind::Response => {
                tracing::warn!("dropping a response that cannot be read: {err}");
                Inbound::Ignore
            }
        },
    }
}

/// Whether the line is one JSON value, whatever it holds.
fn is_json(line: &[u8]) -> bool {
    serde_json::from_slice::<IgnoredAny>(line).is_ok()
}

/// Whether the line holds an object (serde also reads structs from arrays).
fn is_object(line: &[u8]) -> bool {
    line.iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b == b'{')
}

/// Answers with -32600 under `id` (`null` when unknown).
pub(crate) fn invalid_request(id: Option<&RawValue>, why: impl Into<Cow<'static, str>>) -> Inbound {
    let why = why.into();
    tracing::warn!("invalid JSON-RPC request: {why}");
    let error = ErrorData::invalid_request(format!("Invalid request: {why}"), None);
    Inbound::Answer(error_line(id, error))
}

/// One JSON-RPC error message (no newline), echoing `id` verbatim.
pub(crate) fn error_line(id: Option<&RawValue>, error: ErrorData) -> String {
    #[derive(Serialize)]
    struct ErrorLine<'a> {
        jsonrpc: JsonRpcVersion2_0,
        id: Option<&'a RawValue>,
        error: ErrorData,
    }
    let line = ErrorLine {
        jsonrpc: JsonRpcVersion2_0,
        id,
        error,
    };
    serde_json::to_string(&line).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn answer(line: &str) -> String {
        match classify(line.as_bytes()) {
            Inbound::Answer(text) => text,
            other => panic!("{line}: expected an answer, got {other:?}"),
        }
    }

    fn code(answer: &str) -> Value {
        // The id is cut out first: `Value` cannot hold every number an id may be.
        let error = &answer[answer.find("\"error\":").unwrap() + 8..answer.len() - 1];
        serde_json::from_str::<Value>(error).unwrap()["code"].clone()
    }

    #[test]
    fn a_syntax_error_after_a_duplicate_field_is_still_a_parse_error() {
        // The envelope's reading stops at the second `method`, before the broken end.
        let line = r#"{"jsonrpc":"2.0","id":2,"method":"ping","method"":"ping"}"#;
        assert_eq!(code(&answer(line)), json!(-32700));
    }

    #[test]
    fn lines_that_are_not_json_get_a_parse_error_without_id() {
        for line in ["{\"jsonrpc\": ", "\u{1}", "{\"id\": 1,}"] {
            let answer = answer(line);
            assert!(
                answer.starts_with("{\"jsonrpc\":\"2.0\",\"id\":null,"),
                "{answer}"
            );
            assert_eq!(code(&answer), -32700, "{line}");
        }
        let not_utf8 = match classify(b"\xff\xfe") {
            Inbound::Answer(text) => text,
            other => panic!("{other:?}"),
        };
        assert_eq!(code(&not_utf8), -32700);
    }

    #[test]
    fn json_that_is_not_a_message_is_an_invalid_request_without_id() {
        for line in [
            "[1, 2]",
            "5",
            "\"ping\"",
            "{\"jsonrpc\": \"2.0\", \"id\": 3}",
        ] {
            let answer = answer(line);
            assert_eq!(code(&answer), -32600, "{line}");
        }
        assert!(answer("[1, 2]").contains("\"id\":null"));
        assert!(answer("{\"jsonrpc\": \"2.0\", \"id\": 3}").contains("\"id\":3"));
    }

    #[test]
    fn unreadable_requests_get_invalid_request_with_their_id() {
        let line = json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": 5});
        let answer = answer(&line.to_string());
        assert!(answer.contains("\"id\":6,"), "{answer}");
        assert_eq!(code(&answer), -32600);
    }

    #[test]
    fn ids_beyond_64_bits_are_echoed_exactly_as_written() {
        for id in [
            "18446744073709551616",
            "1e400",
            "-1e400",
            "1.5",
            "123456789012345678901234567890",
        ] {
            let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}");
            let answer = answer(&line);
            assert!(
                answer.starts_with(&format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\"")),
                "{answer}"
            );
            assert_eq!(code(&answer), -32600);
        }
    }

    #[test]
    fn ids_that_are_neither_strings_nor_numbers_are_answered_with_null() {
        let answer = answer("{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"ping\"}");
        assert!(answer.contains("\"id\":null"), "{answer}");
        assert_eq!(code(&answer), -32600);
    }

    #[test]
    fn unreadable_notifications_and_responses_are_dropped_not_answered() {
        for line in [
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": 5}),
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": "x"}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized", "params": 5}),
            json!({"jsonrpc": "2.0", "id": 18446744073709551615u64, "result": {}}),
            json!({"jsonrpc": "2.0", "id": 3, "error": "no"}),
        ] {
            assert!(
                matches!(classify(line.to_string().as_bytes()), Inbound::Ignore),
                "{line}"
            );
        }
    }

    #[test]
    fn readable_messages_pass_through() {
        for line in [
            json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": "a", "method": "vendor/thing", "params": {}}),
            json!({"jsonrpc": "2.0", "id": 9223372036854775807i64, "method": "ping"}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 0, "result": {}}),
        ] {
            assert!(
                matches!(classify(line.to_string().as_bytes()), Inbound::Message(_)),
                "{line}"
            );
        }
    }

    #[test]
    fn an_oversize_request_is_answered_under_its_id_and_a_response_dropped() {
        let filler = "x".repeat(10_000);
        let whole = format!(
            r#"{{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{{"prompt":"{filler}"}}}}"#
        );
        let request = Oversize {
            head: whole.as_bytes()[..4096].to_vec(),
            tail: whole.as_bytes()[whole.len() - 4096..].to_vec(),
            len: whole.len() as u64,
        };
        let Inbound::Answer(text) = answer_oversize(&request, 16 << 20) else {
            panic!("not answered");
        };
        let answer: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(answer["id"], "abc");
        assert_eq!(answer["error"]["code"], -32600);
        assert!(text.contains("16 MiB"), "{text}");
        let whole = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":"{filler}"}}}}"#);
        let response = Oversize {
            head: whole.as_bytes()[..4096].to_vec(),
            tail: whole.as_bytes()[whole.len() - 4096..].to_vec(),
            len: whole.len() as u64,
        };
        assert!(matches!(
            answer_oversize(&response, 16 << 20),
            Inbound::Ignore
        ));
    }
}
