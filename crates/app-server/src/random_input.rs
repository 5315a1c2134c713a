//! The app-server's input under random and mutated input: every message is decoded —
//! envelope, typed params of every client method, answers to the server's approval
//! questions — without a panic or a hang, into a value or an error to answer with. (The
//! line reader beneath is `deputy-jsonrpc`'s, property-tested there.)
//!
//! CI runs 256 cases of each; `PROPTEST_CASES=100000 cargo test -p deputy-app-server --lib
//! random_input` runs more.

use std::time::Duration;

use deputy_test_support::random_input::{config, json_value, mutated, within};
use proptest::prelude::*;
use serde_json::Value;

use crate::protocol::error_codes::{INVALID_REQUEST, PARSE_ERROR};
use crate::protocol::{
    ClientRequest, CommandExecutionRequestApprovalResponse, FileChangeRequestApprovalResponse,
    IncomingMessage, RequestParseError,
};

/// How long one case may take before it counts as a hang.
const HANG: Duration = Duration::from_secs(10);

/// Valid client messages (with and without `"jsonrpc"`), the starting points of mutations.
const MESSAGES: &[&str] = &[
    r#"{"id":1,"method":"initialize","params":{"clientInfo":{"name":"t","version":"1"}}}"#,
    r#"{"method":"initialized"}"#,
    r#"{"jsonrpc":"2.0","id":"s","method":"thread/start","params":{"model":"m","cwd":"/w","approvalPolicy":"never","sandbox":"read-only"}}"#,
    r#"{"id":3,"method":"turn/start","params":{"threadId":"0192","input":[{"type":"text","text":"hi"}]}}"#,
    r#"{"id":4,"method":"turn/interrupt","params":{"threadId":"0192","turnId":"t1"}}"#,
    r#"{"id":5,"method":"thread/list","params":{"cursor":null,"limit":10}}"#,
    r#"{"id":6,"method":"review/start","params":{"threadId":"0192","target":{"type":"uncommittedChanges"}}}"#,
    r#"{"id":0,"result":{"decision":"accept"}}"#,
    r#"{"id":0,"error":{"code":-32000,"message":"no"}}"#,
];

/// Field names of the protocol's params, so that random values meet real fields.
const FIELDS: &[&str] = &[
    "threadId",
    "turnId",
    "input",
    "type",
    "text",
    "cwd",
    "model",
    "approvalPolicy",
    "sandbox",
    "sandboxPolicy",
    "config",
    "cursor",
    "limit",
    "target",
    "sha",
    "branch",
    "instructions",
    "clientInfo",
    "name",
    "version",
    "decision",
    "path",
    "url",
    "items",
    "archived",
    "modelProvider",
    "effort",
    "summary",
    "baseInstructions",
    "developerInstructions",
    "accept",
    "acceptForSession",
    "decline",
    "cancel",
    "uncommittedChanges",
    "baseBranch",
    "commit",
    "custom",
    "never",
    "read-only",
];

/// Reads `line` as a message and checks the outcome is a message or an error to answer.
#[allow(
    clippy::result_large_err,
    reason = "the rejection holds the request id as a JSON value, as IncomingMessage::parse returns it"
)]
fn check_message(line: Vec<u8>) -> Result<(), TestCaseError> {
    let json = serde_json::from_slice::<Value>(&line).is_ok();
    let parsed = within(HANG, move || IncomingMessage::parse(&line));
    match parsed {
        Ok(message) => {
            prop_assert!(json);
            if let IncomingMessage::Request { method, params, .. } = message {
                let decoded = within(HANG, move || ClientRequest::parse(&method, params));
                check_request(decoded)?;
            }
        }
        Err(rejection) => {
            let expected = if json { INVALID_REQUEST } else { PARSE_ERROR };
            prop_assert_eq!(rejection.error.code, expected);
            prop_assert!(!rejection.error.message.is_empty());
        }
    }
    Ok(())
}

fn check_request(decoded: Result<ClientRequest, RequestParseError>) -> Result<(), TestCaseError> {
    if let Err(err) = decoded {
        // Every refusal says why, for the client's error message.
        prop_assert!(!err.to_string().is_empty());
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn random_bytes_are_a_parse_error_or_a_message(line in prop::collection::vec(any::<u8>(), 0..300)) {
        check_message(line)?;
    }

    #[test]
    fn mutated_messages_are_read_or_answered_with_an_error(line in mutated(MESSAGES)) {
        check_message(line)?;
    }

    #[test]
    fn random_params_of_every_method_are_typed_or_refused(
        method in prop::sample::select(ClientRequest::METHODS),
        params in prop::option::of(json_value(FIELDS)),
    ) {
        let decoded = within(HANG, move || ClientRequest::parse(method, params));
        check_request(decoded)?;
    }

    #[test]
    fn random_answers_to_approval_questions_are_read_or_refused(answer in json_value(FIELDS)) {
        let again = answer.clone();
        within(HANG, move || {
            let _ = serde_json::from_value::<CommandExecutionRequestApprovalResponse>(answer);
            let _ = serde_json::from_value::<FileChangeRequestApprovalResponse>(again);
        });
    }
}
