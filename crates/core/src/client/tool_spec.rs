//! What a tool looks like to the model, and its form on each wire API.
//!
//! The Responses API takes every kind as it is. Chat Completions knows only functions: a
//! freeform tool becomes a function taking its text as `input`, a namespace's functions
//! become functions named `<namespace><name>` (a namespace's name ends in `__`, so
//! `mcp__docs__` + `search` reads `mcp__docs__search`), and hosted tools are left out.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};

/// A tool as offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolSpec {
    /// A function with JSON arguments.
    Function(FunctionTool),
    /// A tool that takes raw text, optionally constrained by a grammar (Responses
    /// `custom` tool); its calls arrive as `custom_tool_call` items.
    Freeform(FreeformTool),
    /// Functions grouped under one name (Responses `namespace` tool); their calls
    /// arrive as `function_call` items naming the namespace.
    Namespace(NamespaceTool),
    /// A tool the provider runs itself; its calls arrive as items of their own type.
    Hosted(HostedTool),
}

/// A function tool.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionTool {
    /// Tool name.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object, shared: a built-in tool's schema is made once
    /// per process and every turn's registry and request lists the same one.
    pub parameters: Arc<Value>,
}

/// A freeform tool.
#[derive(Debug, Clone, PartialEq)]
pub struct FreeformTool {
    /// Tool name.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// The grammar the text must follow, when it has one.
    pub grammar: Option<Grammar>,
}

/// A grammar constraining a freeform tool's text.
#[derive(Debug, Clone, PartialEq)]
pub struct Grammar {
    /// The grammar's notation (`lark`, `regex`).
    pub syntax: String,
    /// The grammar itself.
    pub definition: String,
}

/// A namespace of functions.
#[derive(Debug, Clone, PartialEq)]
pub struct NamespaceTool {
    /// The namespace's name (ends in `__`).
    pub name: String,
    /// What the namespace holds, for the model.
    pub description: String,
    /// Its functions.
    pub tools: Vec<FunctionTool>,
}

/// A tool the provider runs.
#[derive(Debug, Clone, PartialEq)]
pub enum HostedTool {
    /// Web search (Responses `web_search`).
    WebSearch {
        /// Live results (`true`) or the provider's cache only.
        external_web_access: bool,
    },
}

/// The description a freeform tool's `input` gets where it is offered as a function.
const FREEFORM_INPUT: &str = "The tool's input, as plain text.";

impl ToolSpec {
    /// A function tool.
    pub fn function(name: &str, description: &str, parameters: Value) -> Self {
        Self::Function(FunctionTool {
            name: name.to_string(),
            description: description.to_string(),
            parameters: Arc::new(parameters),
        })
    }

    /// The name the model calls the tool by; `None` for a hosted tool.
    pub fn name(&self) -> Option<&str> {
        match self {
            Self::Function(tool) => Some(&tool.name),
            Self::Freeform(tool) => Some(&tool.name),
            Self::Namespace(tool) => Some(&tool.name),
            Self::Hosted(_) => None,
        }
    }

    /// Bytes of text the model reads about the tool, for size estimates.
    pub(crate) fn text_bytes(&self) -> usize {
        match self {
            Self::Function(tool) => {
                tool.name.len() + tool.description.len() + tool.parameters.to_string().len()
            }
            Self::Freeform(_) | Self::Namespace(_) | Self::Hosted(_) => {
                self.responses_json().to_string().len()
            }
        }
    }

    /// The tool as a Responses request lists it, as a value.
    pub(crate) fn responses_json(&self) -> Value {
        // Plain data with string keys: converting cannot fail.
        serde_json::to_value(self.responses_wire()).unwrap_or_default()
    }

    /// The tool as a Responses request lists it, borrowing its schema and texts.
    pub(crate) fn responses_wire(&self) -> ResponsesTool<'_> {
        match self {
            Self::Function(tool) => ResponsesTool::function(tool),
            Self::Freeform(tool) => ResponsesTool::Custom {
                name: &tool.name,
                description: &tool.description,
                format: tool.grammar.as_ref().map(|grammar| GrammarFormat {
                    kind: "grammar",
                    syntax: &grammar.syntax,
                    definition: &grammar.definition,
                }),
            },
            Self::Namespace(tool) => ResponsesTool::Namespace {
                name: &tool.name,
                description: &tool.description,
                tools: tool.tools.iter().map(ResponsesTool::function).collect(),
            },
            Self::Hosted(HostedTool::WebSearch {
                external_web_access,
            }) => ResponsesTool::WebSearch {
                external_web_access: *external_web_access,
            },
        }
    }

    /// The tool as a Chat Completions request lists it: none, one or several functions.
    pub(crate) fn chat_json(&self) -> Vec<Value> {
        let function = |name: &str, description: &str, parameters: &Value| {
            json!({
                "type": "function",
                "function": {
                    "name": name,
                    "description": description,
                    "parameters": parameters,
                },
            })
        };
        match self {
            Self::Function(tool) => vec![function(&tool.name, &tool.description, &tool.parameters)],
            Self::Freeform(tool) => vec![function(
                &tool.name,
                &tool.description,
                &freeform_parameters(),
            )],
            Self::Namespace(namespace) => namespace
                .tools
                .iter()
                .map(|tool| {
                    let name = format!("{}{}", namespace.name, tool.name);
                    function(&name, &tool.description, &tool.parameters)
                })
                .collect(),
            Self::Hosted(_) => Vec::new(),
        }
    }
}

/// A tool in a Responses request.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ResponsesTool<'a> {
    Function {
        name: &'a str,
        description: &'a str,
        strict: bool,
        parameters: &'a Value,
    },
    Custom {
        name: &'a str,
        description: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        format: Option<GrammarFormat<'a>>,
    },
    Namespace {
        name: &'a str,
        description: &'a str,
        tools: Vec<ResponsesTool<'a>>,
    },
    WebSearch {
        external_web_access: bool,
    },
}

impl<'a> ResponsesTool<'a> {
    fn function(tool: &'a FunctionTool) -> Self {
        Self::Function {
            name: &tool.name,
            description: &tool.description,
            strict: false,
            parameters: &tool.parameters,
        }
    }
}

/// A freeform tool's grammar in a Responses request.
#[derive(Debug, Serialize)]
pub(crate) struct GrammarFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    syntax: &'a str,
    definition: &'a str,
}

/// The arguments of a freeform tool offered as a function: its text as `input`.
pub(crate) fn freeform_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {"input": {"type": "string", "description": FREEFORM_INPUT}},
        "required": ["input"],
        "additionalProperties": false,
    })
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn lookup() -> FunctionTool {
        FunctionTool {
            name: "lookup".into(),
            description: "Looks a word up.".into(),
            parameters: Arc::new(
                json!({"type": "object", "properties": {"word": {"type": "string"}}}),
            ),
        }
    }

    fn every_kind() -> Vec<ToolSpec> {
        vec![
            ToolSpec::Function(lookup()),
            ToolSpec::Freeform(FreeformTool {
                name: "edit".into(),
                description: "Edits.".into(),
                grammar: Some(Grammar {
                    syntax: "lark".into(),
                    definition: "start: \"x\"".into(),
                }),
            }),
            ToolSpec::Namespace(NamespaceTool {
                name: "mcp__docs__".into(),
                description: "Project docs.".into(),
                tools: vec![lookup()],
            }),
            ToolSpec::Hosted(HostedTool::WebSearch {
                external_web_access: true,
            }),
        ]
    }

    #[test]
    fn responses_lists_every_kind_as_it_is() {
        let listed: Vec<Value> = every_kind().iter().map(ToolSpec::responses_json).collect();
        let function = json!({"type": "function", "name": "lookup", "description": "Looks a word up.",
            "strict": false, "parameters": lookup().parameters});
        assert_eq!(
            listed,
            [
                function.clone(),
                json!({"type": "custom", "name": "edit", "description": "Edits.",
                    "format": {"type": "grammar", "syntax": "lark", "definition": "start: \"x\""}}),
                json!({"type": "namespace", "name": "mcp__docs__", "description": "Project docs.",
                    "tools": [function]}),
                json!({"type": "web_search", "external_web_access": true}),
            ]
        );
    }

    #[test]
    fn chat_lists_only_functions_flattening_namespaces_and_leaving_hosted_tools_out() {
        let listed: Vec<Value> = every_kind().iter().flat_map(ToolSpec::chat_json).collect();
        let names: Vec<&str> = listed
            .iter()
            .map(|tool| tool["function"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["lookup", "edit", "mcp__docs__lookup"]);
        assert_eq!(listed[1]["function"]["parameters"], freeform_parameters());
        assert!(listed.iter().all(|tool| tool["type"] == "function"));
    }
}
