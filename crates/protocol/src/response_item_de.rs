//! Reading a [`ResponseItem`]: the tag first and the variant's fields straight from the
//! rest of the object (as `tagged.rs` does for events), and an item of a type deputy does
//! not interpret kept whole as [`ResponseItem::Other`], so that it goes back to the
//! provider with the history instead of being lost.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, de::value::MapAccessDeserializer};
use serde_json::{Map, Value};

use crate::tagged::Text;
use crate::{ContentItem, FunctionOutput, ReasoningSummary, ResponseItem};

// One struct per variant, with the variant's own serde attributes: building the variant
// from it names every field, so a field added to one and not the other does not compile.

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    id: Option<String>,
    role: String,
    content: Vec<ContentItem>,
}

#[derive(Deserialize)]
struct Reasoning {
    #[serde(default)]
    id: String,
    #[serde(default)]
    summary: Vec<ReasoningSummary>,
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    encrypted_content: Option<String>,
}

#[derive(Deserialize)]
struct FunctionCall {
    #[serde(default)]
    id: Option<String>,
    name: String,
    #[serde(default)]
    namespace: Option<String>,
    arguments: String,
    call_id: String,
}

#[derive(Deserialize)]
struct CustomToolCall {
    #[serde(default)]
    id: Option<String>,
    name: String,
    input: String,
    call_id: String,
}

#[derive(Deserialize)]
struct CallOutput {
    call_id: String,
    output: FunctionOutput,
}

/// The item `tag` names, read from the rest of its object.
fn variant<'de, R: Deserializer<'de>>(tag: &str, rest: R) -> Result<ResponseItem, R::Error> {
    Ok(match tag {
        "message" => {
            let Message { id, role, content } = Message::deserialize(rest)?;
            ResponseItem::Message { id, role, content }
        }
        "reasoning" => {
            let Reasoning {
                id,
                summary,
                content,
                encrypted_content,
            } = Reasoning::deserialize(rest)?;
            ResponseItem::Reasoning {
                id,
                summary,
                content,
                encrypted_content,
            }
        }
        "function_call" => {
            let FunctionCall {
                id,
                name,
                namespace,
                arguments,
                call_id,
            } = FunctionCall::deserialize(rest)?;
            ResponseItem::FunctionCall {
                id,
                name,
                namespace,
                arguments,
                call_id,
            }
        }
        "function_call_output" => {
            let CallOutput { call_id, output } = CallOutput::deserialize(rest)?;
            ResponseItem::FunctionCallOutput { call_id, output }
        }
        "custom_tool_call" => {
            let CustomToolCall {
                id,
                name,
                input,
                call_id,
            } = CustomToolCall::deserialize(rest)?;
            ResponseItem::CustomToolCall {
                id,
                name,
                input,
                call_id,
            }
        }
        "custom_tool_call_output" => {
            let CallOutput { call_id, output } = CallOutput::deserialize(rest)?;
            ResponseItem::CustomToolCallOutput { call_id, output }
        }
        other => {
            let fields = Map::<String, Value>::deserialize(rest)?;
            let mut object = Map::with_capacity(fields.len() + 1);
            object.insert("type".to_string(), Value::String(other.to_string()));
            object.extend(fields);
            ResponseItem::Other(Value::Object(object))
        }
    })
}

// Every variant is read above.
const _: fn(&ResponseItem) = |item| match item {
    ResponseItem::Message { .. }
    | ResponseItem::Reasoning { .. }
    | ResponseItem::FunctionCall { .. }
    | ResponseItem::FunctionCallOutput { .. }
    | ResponseItem::CustomToolCall { .. }
    | ResponseItem::CustomToolCallOutput { .. }
    | ResponseItem::Other(_) => {}
};

impl<'de> Deserialize<'de> for ResponseItem {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ItemVisitor;

        impl<'de> Visitor<'de> for ItemVisitor {
            type Value = ResponseItem;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a history item: an object with a `type`")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ResponseItem, A::Error> {
                use de::Error as _;
                let Some(Text(key)) = map.next_key::<Text<'de>>()? else {
                    return Err(A::Error::missing_field("type"));
                };
                if key == "type" {
                    let Text(tag) = map.next_value::<Text<'de>>()?;
                    return variant(&tag, MapAccessDeserializer::new(map));
                }
                // The tag comes later: buffer the object, then read it.
                let mut object = Map::new();
                object.insert(key.into_owned(), map.next_value()?);
                while let Some((key, value)) = map.next_entry::<String, Value>()? {
                    object.insert(key, value);
                }
                let tag = match object.remove("type") {
                    Some(Value::String(tag)) => tag,
                    Some(_) => return Err(A::Error::custom("`type` is not a string")),
                    None => return Err(A::Error::missing_field("type")),
                };
                variant(&tag, Value::Object(object)).map_err(A::Error::custom)
            }
        }

        deserializer.deserialize_map(ItemVisitor)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::{ContentItem, FunctionOutput, ResponseItem};

    fn round_trip(item: &ResponseItem) -> ResponseItem {
        let text = serde_json::to_string(item).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn every_item_reads_back_as_written() {
        let items = [
            ResponseItem::Message {
                id: Some("m".into()),
                role: "user".into(),
                content: vec![ContentItem::InputText { text: "hi".into() }],
            },
            ResponseItem::Reasoning {
                id: "r".into(),
                summary: vec![],
                content: Some(json!([{"type": "reasoning_text", "text": "because"}])),
                encrypted_content: Some("opaque".into()),
            },
            ResponseItem::FunctionCall {
                id: None,
                name: "echo".into(),
                namespace: Some("mcp__docs__".into()),
                arguments: "{}".into(),
                call_id: "c1".into(),
            },
            ResponseItem::FunctionCallOutput {
                call_id: "c1".into(),
                output: FunctionOutput::from("out"),
            },
            ResponseItem::CustomToolCall {
                id: Some("ct".into()),
                name: "apply_patch".into(),
                input: "*** Begin Patch".into(),
                call_id: "c2".into(),
            },
            ResponseItem::CustomToolCallOutput {
                call_id: "c2".into(),
                output: FunctionOutput::from("done"),
            },
            ResponseItem::Other(json!({"type": "web_search_call", "status": "completed",
                "action": {"type": "search", "query": "rust"}})),
        ];
        for item in &items {
            assert_eq!(&round_trip(item), item);
        }
    }

    #[test]
    fn an_unknown_item_is_kept_whole_whatever_its_key_order() {
        let later_tag: ResponseItem = serde_json::from_str(
            r#"{"id": "ws_1", "type": "web_search_call", "status": "completed"}"#,
        )
        .unwrap();
        assert_eq!(
            later_tag,
            ResponseItem::Other(
                json!({"type": "web_search_call", "id": "ws_1", "status": "completed"})
            )
        );
        assert_eq!(
            serde_json::to_value(&later_tag).unwrap(),
            json!({"type": "web_search_call", "id": "ws_1", "status": "completed"})
        );
        let known_later: ResponseItem = serde_json::from_str(
            r#"{"call_id": "c", "output": "x", "type": "function_call_output"}"#,
        )
        .unwrap();
        assert_eq!(
            known_later,
            ResponseItem::FunctionCallOutput {
                call_id: "c".into(),
                output: "x".into()
            }
        );
    }

    #[test]
    fn a_function_call_written_before_namespaces_reads_without_one() {
        let old: ResponseItem = serde_json::from_str(
            r#"{"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c"}"#,
        )
        .unwrap();
        assert!(matches!(
            old,
            ResponseItem::FunctionCall {
                namespace: None,
                ..
            }
        ));
        assert!(!serde_json::to_string(&old).unwrap().contains("namespace"));
    }
}
