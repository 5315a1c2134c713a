//! An MCP tool's input schema made acceptable to the model's provider.
//!
//! MCP allows any JSON Schema; the providers take a subset. Both wire APIs want an object
//! schema at the top, without `oneOf`/`anyOf`/`allOf`/`not`/`enum` there (OpenAI refuses
//! them), and several Chat servers refuse a schema node without a `type`, an object
//! without `properties`, an array without `items`, a boolean schema, or `$schema`. The
//! sanitised schema says the same where it can and is looser where it cannot: the server
//! still checks the arguments it gets.

use serde_json::{Map, Value, json};

/// Keywords whose value is one schema.
const ONE_SCHEMA: &[&str] = &["items", "additionalProperties", "not", "contains"];
/// Keywords whose value is a list of schemas.
const SCHEMA_LISTS: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems"];
/// Keywords whose value maps names to schemas.
const SCHEMA_MAPS: &[&str] = &["properties", "patternProperties", "$defs", "definitions"];
/// Combinators providers refuse at the top of a function's parameters.
const NOT_AT_TOP: &[&str] = &["oneOf", "anyOf", "allOf", "not", "enum", "const"];

/// The schema to offer for an MCP tool whose `inputSchema` is `schema`.
pub(crate) fn sanitize_input_schema(schema: &Map<String, Value>) -> Value {
    let mut top = Value::Object(schema.clone());
    sanitize(&mut top);
    let mut top = match top {
        Value::Object(top) => top,
        _ => Map::new(),
    };
    top.remove("$schema");
    for key in NOT_AT_TOP {
        top.remove(*key);
    }
    top.insert("type".into(), json!("object"));
    top.entry("properties").or_insert_with(|| json!({}));
    Value::Object(top)
}

/// Makes every schema node under `node` an object with a `type` (unless it combines others).
fn sanitize(node: &mut Value) {
    let map = match node {
        // `true` accepts anything, `false` nothing: neither is a form providers take.
        Value::Bool(_) => {
            *node = json!({"type": "string"});
            return;
        }
        Value::Object(map) => map,
        _ => {
            *node = json!({"type": "string"});
            return;
        }
    };
    map.remove("$schema");
    for key in ONE_SCHEMA {
        // `additionalProperties: false` is a boolean that means what it says.
        if *key == "additionalProperties" && matches!(map.get(*key), Some(Value::Bool(_))) {
            continue;
        }
        if let Some(child) = map.get_mut(*key) {
            sanitize(child);
        }
    }
    for key in SCHEMA_LISTS {
        if let Some(Value::Array(children)) = map.get_mut(*key) {
            children.iter_mut().for_each(sanitize);
        }
    }
    for key in SCHEMA_MAPS {
        if let Some(Value::Object(children)) = map.get_mut(*key) {
            children.values_mut().for_each(sanitize);
        }
    }
    let combines =
        SCHEMA_LISTS[..3].iter().any(|k| map.contains_key(*k)) || map.contains_key("$ref");
    if !map.contains_key("type") && !combines {
        let inferred = if ["properties", "required", "additionalProperties"]
            .iter()
            .any(|k| map.contains_key(*k))
        {
            "object"
        } else if map.contains_key("items") || map.contains_key("prefixItems") {
            "array"
        } else if [
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "multipleOf",
        ]
        .iter()
        .any(|k| map.contains_key(*k))
        {
            "number"
        } else {
            "string"
        };
        map.insert("type".into(), json!(inferred));
    }
    let is = |t: &str, map: &Map<String, Value>| match map.get("type") {
        Some(Value::String(s)) => s == t,
        Some(Value::Array(types)) => types.iter().any(|v| v == t),
        _ => false,
    };
    if is("object", map) && !map.contains_key("properties") {
        map.insert("properties".into(), json!({}));
    }
    if is("array", map) && !map.contains_key("items") {
        map.insert("items".into(), json!({"type": "string"}));
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn sanitized(schema: Value) -> Value {
        sanitize_input_schema(schema.as_object().expect("an object"))
    }

    #[test]
    fn a_plain_schema_is_kept() {
        let schema = json!({"type": "object", "properties": {"message": {"type": "string",
            "description": "what to echo"}}, "required": ["message"],
            "additionalProperties": false});
        assert_eq!(sanitized(schema.clone()), schema);
    }

    #[test]
    fn the_top_is_always_an_object_without_combinators() {
        assert_eq!(
            sanitized(json!({"$schema": "http://json-schema.org/draft-07/schema#",
                "anyOf": [{"required": ["a"]}, {"required": ["b"]}],
                "properties": {"a": {"type": "string"}, "b": {"type": "string"}}})),
            json!({"type": "object", "properties": {"a": {"type": "string"},
                "b": {"type": "string"}}})
        );
        assert_eq!(
            sanitized(json!({})),
            json!({"type": "object", "properties": {}})
        );
    }

    #[test]
    fn nested_nodes_get_a_type_and_what_the_type_needs() {
        assert_eq!(
            sanitized(json!({"type": "object", "properties": {
                "tags": {"type": "array"},
                "options": {"type": "object"},
                "anything": true,
                "limit": {"minimum": 1},
                "kind": {"enum": ["a", "b"]},
                "nested": {"properties": {"x": {}}},
                "choice": {"anyOf": [{"type": "string"}, {"items": {"type": "integer"}}]},
            }})),
            json!({"type": "object", "properties": {
                "tags": {"type": "array", "items": {"type": "string"}},
                "options": {"type": "object", "properties": {}},
                "anything": {"type": "string"},
                "limit": {"type": "number", "minimum": 1},
                "kind": {"type": "string", "enum": ["a", "b"]},
                "nested": {"type": "object", "properties": {"x": {"type": "string"}}},
                "choice": {"anyOf": [{"type": "string"},
                    {"type": "array", "items": {"type": "integer"}}]},
            }})
        );
    }
}
