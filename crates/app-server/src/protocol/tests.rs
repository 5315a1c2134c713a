use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

#[test]
fn each_method_name_is_defined_once() {
    let mut names: Vec<&str> = ClientRequest::METHODS
        .iter()
        .chain(ServerNotification::METHODS)
        .chain(ServerRequest::METHODS)
        .chain(ClientNotification::METHODS)
        .copied()
        .collect();
    let count = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), count);
    assert_eq!(
        <methods::TurnStart as ClientMethod>::METHOD,
        ClientRequest::METHODS[7]
    );
}

#[test]
fn requests_are_typed_by_method_and_bad_ones_say_why() {
    let parsed = ClientRequest::parse(
        "turn/interrupt",
        Some(json!({"threadId": "t", "turnId": "u"})),
    );
    assert_eq!(
        parsed,
        Ok(ClientRequest::TurnInterrupt(TurnInterruptParams {
            thread_id: "t".into(),
            turn_id: "u".into(),
        }))
    );
    // Absent or null params mean none: fine when every field is optional.
    for params in [None, Some(serde_json::Value::Null)] {
        assert_eq!(
            ClientRequest::parse("thread/list", params).map(|r| r.method()),
            Ok("thread/list")
        );
    }
    assert_eq!(
        ClientRequest::parse("thread/nope", None),
        Err(RequestParseError::UnknownMethod("thread/nope".into()))
    );
    assert!(matches!(
        ClientRequest::parse("turn/interrupt", Some(json!({"threadId": 1}))),
        Err(RequestParseError::InvalidParams {
            method: "turn/interrupt",
            ..
        })
    ));
}

#[test]
fn incoming_messages_are_read_with_or_without_jsonrpc() {
    for line in [
        r#"{"id":1,"method":"thread/list"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"thread/list"}"#,
    ] {
        assert_eq!(
            IncomingMessage::parse(line.as_bytes()),
            Ok(IncomingMessage::Request {
                id: RequestId::Integer(1),
                method: "thread/list".into(),
                params: None,
            })
        );
    }
    assert_eq!(
        IncomingMessage::parse(br#"{"id":"a","result":{"decision":"accept"}}"#),
        Ok(IncomingMessage::Response {
            id: RequestId::String("a".into()),
            outcome: Ok(json!({"decision": "accept"})),
        })
    );
    assert_eq!(
        IncomingMessage::parse(br#"{"method":"initialized"}"#),
        Ok(IncomingMessage::Notification {
            method: "initialized".into()
        })
    );
}

#[test]
fn unreadable_messages_are_rejected_with_the_right_code_and_id() {
    let code =
        |line: &str| IncomingMessage::parse(line.as_bytes()).map_err(|r| (r.id, r.error.code));
    assert_eq!(code("{"), Err((None, error_codes::PARSE_ERROR)));
    assert_eq!(code("[]"), Err((None, error_codes::INVALID_REQUEST)));
    assert_eq!(code("3"), Err((None, error_codes::INVALID_REQUEST)));
    assert_eq!(
        code(r#"{"id":[1],"method":"x"}"#),
        Err((None, error_codes::INVALID_REQUEST))
    );
    assert_eq!(
        code(r#"{"id":4,"method":7}"#),
        Err((Some(RequestId::Integer(4)), error_codes::INVALID_REQUEST))
    );
    assert_eq!(
        code(r#"{"id":4}"#),
        Err((Some(RequestId::Integer(4)), error_codes::INVALID_REQUEST))
    );
}

#[test]
fn outgoing_messages_have_no_jsonrpc_field_and_keep_field_order() {
    let notification = ServerNotification::TurnDiffUpdated(TurnDiffUpdatedNotification {
        thread_id: "t".into(),
        turn_id: "u".into(),
        diff: "d".into(),
    });
    assert_eq!(
        notification.to_json().unwrap(),
        r#"{"method":"turn/diff/updated","params":{"threadId":"t","turnId":"u","diff":"d"}}"#
    );
    let request = ServerRequest::FileChangeRequestApproval(FileChangeRequestApprovalParams {
        thread_id: "t".into(),
        turn_id: "u".into(),
        item_id: "i".into(),
        reason: None,
        grant_root: None,
    });
    assert_eq!(
        request.to_json(&RequestId::Integer(0)).unwrap(),
        r#"{"id":0,"method":"item/fileChange/requestApproval","params":{"threadId":"t","turnId":"u","itemId":"i","reason":null,"grantRoot":null}}"#
    );
}

#[test]
fn enums_are_spelled_as_codex_spells_them() {
    let policy: SandboxPolicy = serde_json::from_value(json!({
        "type": "workspaceWrite", "writableRoots": ["/x"], "networkAccess": true,
    }))
    .unwrap();
    assert_eq!(
        serde_json::to_value(&policy).unwrap(),
        json!({"type": "workspaceWrite", "writableRoots": ["/x"], "networkAccess": true,
               "excludeTmpdirEnvVar": false, "excludeSlashTmp": false})
    );
    assert_eq!(
        serde_json::to_value(ThreadStatus::Active {
            active_flags: vec![ThreadActiveFlag::WaitingOnApproval]
        })
        .unwrap(),
        json!({"type": "active", "activeFlags": ["waitingOnApproval"]})
    );
    assert_eq!(
        serde_json::to_value(PatchChangeKind::Update { move_path: None }).unwrap(),
        json!({"type": "update", "move_path": null})
    );
    assert_eq!(
        serde_json::to_value(SessionSource::Custom("mcp".into())).unwrap(),
        json!({"custom": "mcp"})
    );
    let params: ThreadStartParams = serde_json::from_value(json!({
        "approvalPolicy": "on-request", "sandbox": "workspace-write",
    }))
    .unwrap();
    assert_eq!(
        params.settings.approval_policy,
        Some(AskForApproval::OnRequest)
    );
    assert_eq!(params.settings.sandbox, Some(SandboxMode::WorkspaceWrite));
    let decision: CommandExecutionRequestApprovalResponse =
        serde_json::from_value(json!({"decision": "acceptForSession"})).unwrap();
    assert_eq!(decision.decision, ApprovalDecision::AcceptForSession);
}
