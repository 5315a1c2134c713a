//! What a tool call gives back to the model: text, or parts (text and images).
//!
//! On the Responses wire a text output is a JSON string and a rich one an array of
//! `input_text` / `input_image` parts, so the type is written and read in exactly those
//! two shapes (a string is read without buffering: outputs are the bulk of a history).

use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

/// The output of a tool call.
#[derive(Debug, Clone, PartialEq)]
pub enum FunctionOutput {
    /// Plain text.
    Text(String),
    /// Text and image parts, in order.
    Content(Vec<OutputContentItem>),
}

/// One part of a rich tool output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputContentItem {
    /// Text.
    InputText {
        /// The text.
        text: String,
    },
    /// An image, as a URL (a `data:` URL for an image deputy read).
    InputImage {
        /// The image's URL.
        image_url: String,
    },
}

impl FunctionOutput {
    /// The output's text: the text itself, or its text parts joined by newlines.
    pub fn text(&self) -> String {
        match self {
            Self::Text(text) => text.clone(),
            Self::Content(parts) => parts
                .iter()
                .filter_map(|part| match part {
                    OutputContentItem::InputText { text } => Some(text.as_str()),
                    OutputContentItem::InputImage { .. } => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    /// The URLs of the output's images, in order.
    pub fn image_urls(&self) -> impl Iterator<Item = &str> {
        let parts = match self {
            Self::Text(_) => &[][..],
            Self::Content(parts) => parts.as_slice(),
        };
        parts.iter().filter_map(|part| match part {
            OutputContentItem::InputImage { image_url } => Some(image_url.as_str()),
            OutputContentItem::InputText { .. } => None,
        })
    }
}

impl From<String> for FunctionOutput {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<&str> for FunctionOutput {
    fn from(text: &str) -> Self {
        Self::Text(text.to_string())
    }
}

impl PartialEq<str> for FunctionOutput {
    fn eq(&self, other: &str) -> bool {
        matches!(self, Self::Text(text) if text == other)
    }
}

impl Serialize for FunctionOutput {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text(text) => serializer.serialize_str(text),
            Self::Content(parts) => parts.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for FunctionOutput {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OutputVisitor;

        impl<'de> Visitor<'de> for OutputVisitor {
            type Value = FunctionOutput;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an array of content parts")
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<FunctionOutput, E> {
                Ok(FunctionOutput::Text(text.to_string()))
            }

            fn visit_string<E: de::Error>(self, text: String) -> Result<FunctionOutput, E> {
                Ok(FunctionOutput::Text(text))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<FunctionOutput, A::Error> {
                let mut parts = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(part) = seq.next_element()? {
                    parts.push(part);
                }
                Ok(FunctionOutput::Content(parts))
            }
        }

        deserializer.deserialize_any(OutputVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_is_a_string_and_content_an_array_of_parts_both_ways() {
        let text = FunctionOutput::from("done");
        assert_eq!(serde_json::to_value(&text).unwrap(), json!("done"));
        let rich = FunctionOutput::Content(vec![
            OutputContentItem::InputText {
                text: "a chart".into(),
            },
            OutputContentItem::InputImage {
                image_url: "data:image/png;base64,AA==".into(),
            },
        ]);
        let wire = json!([
            {"type": "input_text", "text": "a chart"},
            {"type": "input_image", "image_url": "data:image/png;base64,AA=="},
        ]);
        assert_eq!(serde_json::to_value(&rich).unwrap(), wire);
        assert_eq!(
            serde_json::from_value::<FunctionOutput>(wire).unwrap(),
            rich
        );
        assert_eq!(
            serde_json::from_str::<FunctionOutput>("\"done\"").unwrap(),
            text
        );
        assert_eq!(rich.text(), "a chart");
        assert_eq!(
            rich.image_urls().collect::<Vec<_>>(),
            ["data:image/png;base64,AA=="]
        );
        assert!(serde_json::from_value::<FunctionOutput>(json!(3)).is_err());
    }
}
