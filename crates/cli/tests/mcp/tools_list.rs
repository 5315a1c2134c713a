//! `tools/list`, pinned whole: this is the documentation MCP clients and models read.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::harness::Mcp;

fn output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "threadId": {"type": "string"},
            "content": {"type": "string"}
        },
        "required": ["threadId", "content"]
    })
}

#[test]
fn tools_list_offers_codex_and_codex_reply_exactly() {
    let mcp = Mcp::start();
    let listed = mcp.result(mcp.client.request("tools/list", json!({})));
    assert_eq!(
        listed,
        json!({"tools": [
            {
                "name": "codex",
                "title": "Codex",
                "description": "Run a deputy session: the coding agent works on `prompt` in `cwd` (running commands and editing files under the given sandbox and approval policy) and returns its final answer. Accepts configuration parameters matching config.toml.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "prompt": {
                            "description": "The task for the agent: the first user message of the session.",
                            "type": "string"
                        },
                        "model": {
                            "description": "Model to use instead of the configured one (e.g. \"gpt-5-codex\").",
                            "type": "string"
                        },
                        "profile": {
                            "description": "A profile from config.toml whose settings apply to this session.",
                            "type": "string"
                        },
                        "cwd": {
                            "description": "Working directory of the session; a relative path resolves against the server's working directory.",
                            "type": "string"
                        },
                        "approval-policy": {
                            "description": "When the agent must ask before running commands: `untrusted`, `on-failure`, `on-request` or `never`.",
                            "enum": ["untrusted", "on-failure", "on-request", "never"],
                            "type": "string"
                        },
                        "sandbox": {
                            "description": "How commands are confined: `read-only`, `workspace-write` or `danger-full-access`.",
                            "enum": ["read-only", "workspace-write", "danger-full-access"],
                            "type": "string"
                        },
                        "config": {
                            "additionalProperties": true,
                            "description": "Config settings that override config.toml, as dotted paths (e.g. {\"sandbox_workspace_write.network_access\": true}).",
                            "type": "object"
                        },
                        "base-instructions": {
                            "description": "Replaces the agent's built-in instructions.",
                            "type": "string"
                        },
                        "developer-instructions": {
                            "description": "Extra instructions given to the model as a developer message.",
                            "type": "string"
                        },
                        "compact-prompt": {
                            "description": "Prompt used when the conversation history is compacted.",
                            "type": "string"
                        },
                        "include-plan-tool": {
                            "description": "Whether the model is offered the `update_plan` tool (default true).",
                            "type": "boolean"
                        }
                    },
                    "required": ["prompt"]
                },
                "outputSchema": output_schema()
            },
            {
                "name": "codex-reply",
                "title": "Codex Reply",
                "description": "Continue a deputy session by giving its thread id and the next prompt. Works across server restarts.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "prompt": {
                            "description": "The next user message of the session.",
                            "type": "string"
                        },
                        "threadId": {
                            "description": "The thread to continue, as returned in `structuredContent.threadId`.",
                            "type": "string"
                        },
                        "conversationId": {
                            "description": "Deprecated alias of `threadId`.",
                            "type": "string"
                        }
                    },
                    "required": ["prompt"]
                },
                "outputSchema": output_schema()
            }
        ]})
    );
}
