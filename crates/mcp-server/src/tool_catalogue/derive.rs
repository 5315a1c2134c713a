//! The tool definitions derived from the argument and result types: what `tools.json`
//! must hold. The server serves the file; these tests keep it equal to the types.

use std::sync::Arc;

use deputy_protocol::ReviewOutputEvent;
use pretty_assertions::assert_eq;
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;

use super::*;
use crate::review_tool::{REVIEW_TOOL, ReviewToolParam};

/// The tool definitions derived from the argument and result types, in `tools/list` order.
fn derived_tools() -> Vec<Tool> {
    let output = object(serde_json::json!({
        "type": "object",
        "properties": {
            "threadId": {"type": "string"},
            "content": {"type": "string"}
        },
        "required": ["threadId", "content"]
    }));
    vec![
        tool::<CodexToolCallParam>(
            CODEX_TOOL,
            "Codex",
            "Run a deputy session: the coding agent works on `prompt` in `cwd` (running commands and editing files under the given sandbox and approval policy) and returns its final answer. Accepts configuration parameters matching config.toml.",
            output.clone(),
        ),
        tool::<CodexReplyParam>(
            CODEX_REPLY_TOOL,
            "Codex Reply",
            "Continue a deputy session by giving its thread id and the next prompt. Works across server restarts.",
            output,
        ),
        tool::<ConversationCreateParam>(
            CONVERSATION_CREATE_TOOL,
            "Create conversation",
            "Create a conversation with the coding agent and return its id at once. A non-empty `prompt` starts the first turn in the background; follow it with `conversationStream`.",
            output_schema::<ConversationCreateResult>(),
        ),
        tool::<ConversationSendMessageParam>(
            CONVERSATION_SEND_MESSAGE_TOOL,
            "Send message",
            "Send a conversation the next user message. Returns as soon as its turn is queued (behind a running one); cancelling this request interrupts that turn.",
            output_schema::<ConversationSendMessageResult>(),
        ),
        tool::<ConversationStreamParam>(
            CONVERSATION_STREAM_TOOL,
            "Stream conversation",
            "Stream a conversation's events: `notifications/initial_state` with everything so far, then each new event as a notification named by its type. Approval questions are asked here. Cancelling this request pauses the stream; nothing is lost.",
            output_schema::<ConversationStreamResult>(),
        ),
        tool::<ConversationsListParam>(
            CONVERSATIONS_LIST_TOOL,
            "List conversations",
            "List conversations, live and saved, newest first, with their titles.",
            output_schema::<ConversationsListResult>(),
        ),
        tool::<ReviewToolParam>(
            REVIEW_TOOL,
            "Review",
            "Review a change in a git repository: the uncommitted changes (default), the changes against a base branch, one commit, or what custom instructions describe. An isolated reviewer reads the diff (and may run read-only commands) and returns findings by priority (0 = most urgent) with file and line, and an overall verdict. Failures (not a git repository, an unknown branch or commit) are errors without structured content.",
            review_output_schema(),
        ),
    ]
}

/// The tool `name`, whose arguments are `P` and whose structured result `output` describes.
fn tool<P: JsonSchema>(name: &str, title: &str, description: &str, output: JsonObject) -> Tool {
    Tool::new(
        name.to_string(),
        description.to_string(),
        Arc::new(input_schema::<P>()),
    )
    .with_title(title)
    .with_raw_output_schema(Arc::new(output))
}

/// An input schema in the trimmed form Codex's clients know: `type`, `properties`, `required`.
fn input_schema<T: JsonSchema>() -> JsonObject {
    trimmed_schema::<T>(schemars::generate::SchemaSettings::draft2019_09().for_deserialize())
}

/// An output schema, trimmed like the input schemas.
fn output_schema<T: JsonSchema>() -> JsonObject {
    trimmed_schema::<T>(schemars::generate::SchemaSettings::draft2019_09().for_serialize())
}

fn trimmed_schema<T: JsonSchema>(settings: schemars::generate::SchemaSettings) -> JsonObject {
    let settings = settings.with(|s| {
        s.inline_subschemas = true;
    });
    let mut schema = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    strip_null(&mut schema);
    let mut trimmed = JsonObject::new();
    for key in ["type", "properties", "required"] {
        if let Some(value) = schema.get(key) {
            trimmed.insert(key.to_string(), value.clone());
        }
    }
    trimmed
}

/// Optional arguments are simply absent, never `null`: drop the `null`
/// alternatives schemars adds for `Option` fields.
fn strip_null(schema: &mut serde_json::Value) {
    use serde_json::Value;
    let Value::Object(map) = schema else { return };
    if let Some(Value::Array(types)) = map.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            map.insert("type".into(), only);
        }
    }
    if map.get("default").is_some_and(Value::is_null) {
        map.remove("default");
    }
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    for value in map.values_mut() {
        match value {
            Value::Object(_) => strip_null(value),
            Value::Array(items) => items.iter_mut().for_each(strip_null),
            _ => {}
        }
    }
}

fn object(value: serde_json::Value) -> JsonObject {
    match value {
        serde_json::Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// The schema of a successful result's `structuredContent`: the review output object
/// (every field always present) plus `threadId`. Error results carry no structured
/// content, so strict clients never check one against this schema.
fn review_output_schema() -> JsonObject {
    let mut schema = output_schema::<ReviewOutputEvent>();
    drop_formats(&mut schema);
    let mut properties = match schema.remove("properties") {
        Some(serde_json::Value::Object(properties)) => properties,
        _ => JsonObject::new(),
    };
    properties.insert(
        "threadId".into(),
        serde_json::json!({
            "description": "The review's thread: `codex-reply` continues it.",
            "type": "string"
        }),
    );
    // Sorted here: serde_json keeps insertion order in builds with `preserve_order`.
    let mut required: Vec<String> = properties.keys().cloned().collect();
    required.sort();
    schema.insert(
        "required".into(),
        required
            .into_iter()
            .map(serde_json::Value::String)
            .collect(),
    );
    schema.insert("properties".into(), properties.into());
    schema
}

/// Drops `format` annotations (`uint8`, `double`, …): they are not standard JSON Schema
/// formats, and strict validators refuse schemas with formats they do not know.
fn drop_formats(schema: &mut JsonObject) {
    schema.remove("format");
    for value in schema.values_mut() {
        match value {
            serde_json::Value::Object(object) => drop_formats(object),
            serde_json::Value::Array(items) => {
                for item in items {
                    if let serde_json::Value::Object(object) = item {
                        drop_formats(object);
                    }
                }
            }
            _ => {}
        }
    }
}

/// `tools.json` is what the types derive; `DEPUTY_BLESS=1` rewrites it when they change.
#[test]
fn tools_json_is_what_the_types_derive() {
    let derived = serde_json::to_value(derived_tools()).expect("tools serialize");
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tool_catalogue/tools.json");
    if std::env::var_os("DEPUTY_BLESS").is_some() {
        let mut text = serde_json::to_string_pretty(&derived).expect("tools serialize");
        text.push('\n');
        std::fs::write(&path, text).expect("write tools.json");
    }
    let on_disk: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("read tools.json"))
            .expect("tools.json is JSON");
    assert_eq!(
        on_disk, derived,
        "tools.json is stale: run `DEPUTY_BLESS=1 cargo test --workspace tools_json`"
    );
    assert_eq!(
        serde_json::to_value(tools()).expect("tools serialize"),
        derived,
        "the served tools do not read back as the derived ones (rebuild after blessing)"
    );
}

/// The prebuilt `tools/list` answer is the text rmcp writes for the same tools and id:
/// byte for byte where serde_json keeps the order of object keys (as the `deputy` binary
/// is built), the same JSON where it sorts them.
#[test]
fn the_prebuilt_tools_list_answer_is_what_rmcp_writes() {
    use rmcp::model::{ListToolsResult, RequestId, ServerJsonRpcMessage, ServerResult};
    let unordered = r#"{"b":0,"a":0}"#;
    let keeps_order = serde_json::from_str::<serde_json::Value>(unordered)
        .expect("JSON")
        .to_string()
        .as_str()
        == unordered;
    for id in [
        RequestId::Number(7),
        RequestId::Number(i64::MIN),
        RequestId::String("a \"quoted\" é\n".into()),
    ] {
        let mut result = ServerResult::ListToolsResult(ListToolsResult::with_all_items(tools()));
        result.strip_result_type_for_legacy_peer();
        let rmcps = serde_json::to_string(&ServerJsonRpcMessage::response(result, id.clone()))
            .expect("the answer serializes");
        let ours = list_answer(&id);
        let as_json = |text: &str| serde_json::from_str::<serde_json::Value>(text).expect("JSON");
        assert_eq!(as_json(&ours), as_json(&rmcps));
        if keeps_order {
            assert_eq!(ours, rmcps);
        }
    }
}

#[test]
fn every_output_field_is_required() {
    let schema = review_output_schema();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str())
        .collect();
    for field in [
        "threadId",
        "findings",
        "overall_correctness",
        "overall_explanation",
        "overall_confidence_score",
    ] {
        assert!(required.contains(&field), "{field}: {schema:?}");
    }
    assert!(
        !serde_json::to_string(&schema)
            .unwrap_or_default()
            .contains("format")
    );
}
