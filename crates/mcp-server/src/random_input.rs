//! Sorting under random and mutated input: every line is sorted without a panic or a hang —
//! a message for rmcp, an error answer the client can read, or nothing for a notification or
//! response that cannot be read. (The line reader beneath is `deputy-jsonrpc`'s,
//! property-tested there.)
//!
//! CI runs 256 cases of each; `PROPTEST_CASES=100000 cargo test -p deputy-mcp-server --lib
//! random_input` runs more.

use std::time::Duration;

use deputy_test_support::random_input::{config, mutated, within};
use proptest::prelude::*;
use serde_json::Value;

use crate::compat::frames::{Inbound, classify};

/// How long one case may take before it counts as a hang.
const HANG: Duration = Duration::from_secs(10);

/// Valid client messages, the starting points of the mutated ones.
const MESSAGES: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    r#"{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"codex","arguments":{"prompt":"hi","sandbox":"read-only","approval-policy":"never","config":{"model":"m"}}}}"#,
    r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
    r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"x"}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"user"}}"#,
    r#"{"jsonrpc":"2.0","id":7,"result":{"action":"accept","content":{"decision":"approved"}}}"#,
    r#"{"jsonrpc":"2.0","id":8,"error":{"code":-32601,"message":"no"}}"#,
    r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"tools/call","params":{"name":"codex-reply","arguments":{"threadId":"0192","prompt":"go on"}}}"#,
];

/// An error answer as a client reads it; the id stays raw, as it was echoed.
#[derive(serde::Deserialize)]
struct ErrorAnswer<'a> {
    jsonrpc: &'a str,
    #[serde(borrow)]
    id: &'a serde_json::value::RawValue,
    error: ErrorBody,
}

#[derive(serde::Deserialize)]
struct ErrorBody {
    code: i64,
    #[allow(dead_code, reason = "read to check it is there")]
    message: String,
}

/// Checks an answer is one JSON-RPC error line the client can read.
fn check_answer(line: &str) -> Result<i64, TestCaseError> {
    prop_assert!(!line.contains('\n'));
    let answer: ErrorAnswer<'_> = serde_json::from_str(line)
        .map_err(|e| TestCaseError::fail(format!("answer is not an error line: {e}")))?;
    prop_assert_eq!(answer.jsonrpc, "2.0");
    // The id is echoed as the client wrote it, or null: a string or a number.
    let id = answer.id.get().as_bytes();
    prop_assert!(
        id == b"null" || matches!(id.first(), Some(b'"' | b'-' | b'0'..=b'9')),
        "{}",
        answer.id
    );
    let code = answer.error.code;
    prop_assert!(code == -32700 || code == -32600, "{}", code);
    Ok(code)
}

/// Sorts `line` (on a watched thread) and checks the outcome.
fn check_classify(line: Vec<u8>) -> Result<(), TestCaseError> {
    // JSON by the grammar, in UTF-8, and JSON a decoder takes: the two differ on escaped
    // lone surrogates, which are grammatical but undecodable; such a line may be answered
    // either way.
    let grammatical = std::str::from_utf8(&line).is_ok()
        && serde_json::from_slice::<serde::de::IgnoredAny>(&line).is_ok();
    let decodable = serde_json::from_slice::<Value>(&line).is_ok();
    let sorted = within(HANG, move || match classify(&line) {
        Inbound::Message(_) => None,
        Inbound::Answer(answer) => Some(Some(answer)),
        Inbound::Ignore => Some(None),
    });
    match sorted {
        Some(Some(answer)) => {
            let code = check_answer(&answer)?;
            // Not JSON at all is a parse error; JSON that is no message an invalid request.
            if !grammatical {
                prop_assert_eq!(code, -32700);
            }
            if decodable {
                prop_assert_eq!(code, -32600);
            }
        }
        // Read as a message, or ignored: only JSON can be either.
        None | Some(None) => prop_assert!(grammatical),
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn random_bytes_are_answered_with_a_parse_error_or_read(line in prop::collection::vec(any::<u8>(), 0..300)) {
        check_classify(line.into_iter().filter(|b| *b != b'\n').collect())?;
    }

    #[test]
    fn mutated_messages_are_read_answered_or_ignored_never_lost(line in mutated(MESSAGES)) {
        check_classify(line.into_iter().filter(|b| *b != b'\n').collect())?;
    }
}
