//! An MCP tool's result as the model reads it.
//!
//! Text blocks stay text; a structured result is given as its JSON (as Codex gives it);
//! images become image parts (a note, for a model that takes none: the registry sees to
//! that); a resource link, an embedded resource or audio becomes a line saying what it is.
//! The text is cut in the middle like a command's output, to about the thread's
//! `tool_output_token_limit`.

use deputy_protocol::{FunctionOutput, McpToolCallResult, OutputContentItem};
use serde_json::Value;

use crate::exec::truncate_middle;

/// Bytes per token assumed when turning a token limit into a byte budget (as for commands).
const BYTES_PER_TOKEN: usize = 4;

/// What the model is given for `result`.
pub(crate) fn tool_output(result: &McpToolCallResult, token_limit: usize) -> FunctionOutput {
    let mut texts = Vec::new();
    let mut images = Vec::new();
    let structured = result.structured_content.as_ref().filter(|v| !v.is_null());
    if let Some(structured) = structured {
        texts.push(structured.to_string());
    }
    for block in &result.content {
        let kind = block
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let field = |name: &str| block.get(name).and_then(Value::as_str);
        match kind {
            // With a structured result, the text blocks are its rendering: said once.
            "text" if structured.is_some() => {}
            "text" => texts.push(field("text").unwrap_or_default().to_string()),
            "image" => match (field("data"), field("mimeType")) {
                (Some(data), Some(mime)) => images.push(format!("data:{mime};base64,{data}")),
                _ => texts.push("[an image without data or type was left out]".into()),
            },
            "audio" => texts.push(format!(
                "[audio ({}) was left out: the model does not take audio]",
                field("mimeType").unwrap_or("unknown type")
            )),
            "resource_link" => texts.push(resource_link(block)),
            "resource" => texts.push(embedded_resource(block.get("resource"))),
            other => texts.push(format!("[a `{other}` content block was left out]")),
        }
    }
    let text = texts.join("\n");
    let (text, _) = truncate_middle(&text, token_limit.saturating_mul(BYTES_PER_TOKEN));
    if images.is_empty() {
        return FunctionOutput::Text(text);
    }
    let mut parts = Vec::new();
    if !text.is_empty() {
        parts.push(OutputContentItem::InputText { text });
    }
    parts.extend(
        images
            .into_iter()
            .map(|image_url| OutputContentItem::InputImage { image_url }),
    );
    FunctionOutput::Content(parts)
}

/// `resource link: <name> <uri> (<mime>): <description>`.
fn resource_link(block: &Value) -> String {
    let field = |name: &str| block.get(name).and_then(Value::as_str);
    let mut line = format!(
        "resource link: {} <{}>",
        field("title").or(field("name")).unwrap_or("(unnamed)"),
        field("uri").unwrap_or_default()
    );
    if let Some(mime) = field("mimeType") {
        line.push_str(&format!(" ({mime})"));
    }
    if let Some(description) = field("description") {
        line.push_str(&format!(": {description}"));
    }
    line
}

/// An embedded resource: its text, or what its binary content is.
fn embedded_resource(resource: Option<&Value>) -> String {
    let field = |name: &str| resource.and_then(|r| r.get(name)).and_then(Value::as_str);
    let uri = field("uri").unwrap_or_default();
    match (field("text"), field("blob")) {
        (Some(text), _) => format!("resource <{uri}>:\n{text}"),
        (None, Some(blob)) => format!(
            "[resource <{uri}> ({}, about {} bytes) was left out: binary content]",
            field("mimeType").unwrap_or("unknown type"),
            blob.len() / 4 * 3
        ),
        (None, None) => format!("resource <{uri}>"),
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    fn result(content: Value, structured: Option<Value>) -> McpToolCallResult {
        McpToolCallResult {
            content: content.as_array().cloned().unwrap_or_default(),
            structured_content: structured,
            is_error: None,
        }
    }

    #[test]
    fn text_blocks_are_joined() {
        let output = tool_output(
            &result(
                json!([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]),
                None,
            ),
            100,
        );
        assert_eq!(output, FunctionOutput::Text("a\nb".into()));
    }

    #[test]
    fn a_structured_result_is_its_json_and_its_text_rendering_is_not_repeated() {
        let output = tool_output(
            &result(
                json!([{"type": "text", "text": "{\"sum\": 3}"}]),
                Some(json!({"sum": 3})),
            ),
            100,
        );
        assert_eq!(output, FunctionOutput::Text("{\"sum\":3}".into()));
    }

    #[test]
    fn images_become_image_parts_and_links_become_text() {
        let output = tool_output(
            &result(
                json!([
                    {"type": "text", "text": "here"},
                    {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                    {"type": "resource_link", "uri": "demo://resource/1", "name": "r1",
                        "mimeType": "text/plain", "description": "the first"},
                    {"type": "resource", "resource": {"uri": "demo://r/2", "text": "body"}},
                    {"type": "resource", "resource": {"uri": "demo://r/3", "blob": "AAAA",
                        "mimeType": "application/octet-stream"}},
                    {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
                ]),
                None,
            ),
            1000,
        );
        assert_eq!(
            output,
            FunctionOutput::Content(vec![
                OutputContentItem::InputText {
                    text: "here\nresource link: r1 <demo://resource/1> (text/plain): the first\n\
                           resource <demo://r/2>:\nbody\n\
                           [resource <demo://r/3> (application/octet-stream, about 3 bytes) \
                           was left out: binary content]\n\
                           [audio (audio/wav) was left out: the model does not take audio]"
                        .into()
                },
                OutputContentItem::InputImage {
                    image_url: "data:image/png;base64,iVBORw0KGgo=".into()
                },
            ])
        );
    }

    #[test]
    fn long_text_is_cut_in_the_middle_like_command_output() {
        let long = format!("{}{}", "a".repeat(1000), "z".repeat(1000));
        let output = tool_output(&result(json!([{"type": "text", "text": long}]), None), 100);
        let text = output.text();
        assert!(text.len() < 500, "{}", text.len());
        assert!(text.starts_with("aaa") && text.ends_with("zzz"), "{text}");
        assert!(text.contains("bytes truncated"), "{text}");
    }
}
