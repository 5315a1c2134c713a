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

fn conversation_tools() -> Vec<Value> {
    vec![
        json!({
            "name": "conversationCreate",
            "title": "Create conversation",
            "description": "Create a conversation with the coding agent and return its id at once. A non-empty `prompt` starts the first turn in the background; follow it with `conversationStream`.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "prompt": {
                        "description": "The first user message; when not empty, the first turn starts at once in the background.",
                        "type": "string"
                    },
                    "model": {
                        "description": "Model to use instead of the configured one (e.g. \"gpt-5-codex\").",
                        "type": "string"
                    },
                    "cwd": {
                        "description": "Working directory of the conversation; a relative path resolves against the server's working directory.",
                        "type": "string"
                    },
                    "approval_policy": {
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
                    "profile": {
                        "description": "A profile from config.toml whose settings apply to this conversation.",
                        "type": "string"
                    },
                    "base_instructions": {
                        "description": "Replaces the agent's built-in instructions.",
                        "type": "string"
                    }
                },
                "required": ["prompt"]
            },
            "outputSchema": {
                "type": "object",
                "properties": {
                    "conversation_id": {
                        "description": "The new conversation's id (also a thread id for `codex-reply`).",
                        "type": "string"
                    },
                    "model": {"description": "The model it talks to.", "type": "string"}
                },
                "required": ["conversation_id", "model"]
            }
        }),
        json!({
            "name": "conversationSendMessage",
            "title": "Send message",
            "description": "Send a conversation the next user message. Returns as soon as its turn is queued (behind a running one); cancelling this request interrupts that turn.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "conversation_id": {
                        "description": "The conversation, as returned by `conversationCreate` (a `codex` threadId works too).",
                        "type": "string"
                    },
                    "content": {
                        "description": "The message: its parts, in order.",
                        "type": "array",
                        "items": {
                            "description": "One part of a message.",
                            "type": "object",
                            "properties": {
                                "type": {
                                    "description": "What the part is: `text`.",
                                    "enum": ["text"],
                                    "type": "string"
                                },
                                "text": {"description": "The text.", "type": "string"}
                            },
                            "required": ["type", "text"]
                        }
                    }
                },
                "required": ["conversation_id", "content"]
            },
            "outputSchema": {
                "type": "object",
                "properties": {
                    "status": {
                        "description": "`ok`: the message's turn is queued.",
                        "enum": ["ok"],
                        "type": "string"
                    }
                },
                "required": ["status"]
            }
        }),
        json!({
            "name": "conversationStream",
            "title": "Stream conversation",
            "description": "Stream a conversation's events: `notifications/initial_state` with everything so far, then each new event as a notification named by its type. Approval questions are asked here. Cancelling this request pauses the stream; nothing is lost.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "conversation_id": {
                        "description": "The conversation whose events to stream.",
                        "type": "string"
                    }
                },
                "required": ["conversation_id"]
            },
            "outputSchema": {"type": "object"}
        }),
        json!({
            "name": "conversationsList",
            "title": "List conversations",
            "description": "List conversations, live and saved, newest first, with their titles.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "limit": {
                        "description": "Most conversations to return (default 20).",
                        "format": "uint32",
                        "minimum": 0,
                        "type": "integer"
                    },
                    "cursor": {
                        "description": "Where to continue: the `next_cursor` of the previous page.",
                        "type": "string"
                    }
                }
            },
            "outputSchema": {
                "type": "object",
                "properties": {
                    "conversations": {
                        "description": "Conversations, newest first.",
                        "type": "array",
                        "items": {
                            "description": "One conversation in a listing.",
                            "type": "object",
                            "properties": {
                                "conversation_id": {"description": "Its id.", "type": "string"},
                                "title": {
                                    "description": "Its first user message, on one line and shortened; empty before the first message.",
                                    "type": "string"
                                }
                            },
                            "required": ["conversation_id", "title"]
                        }
                    },
                    "next_cursor": {
                        "description": "Pass as `cursor` for the next page; absent on the last page.",
                        "type": "string"
                    }
                },
                "required": ["conversations"]
            }
        }),
    ]
}

#[test]
fn tools_list_offers_codex_codex_reply_and_the_conversation_tools_exactly() {
    let mcp = Mcp::start();
    let mut listed = mcp.result(mcp.client.request("tools/list", json!({})));
    let conversations = listed["tools"]
        .as_array_mut()
        .map(|tools| tools.split_off(2.min(tools.len())))
        .unwrap_or_default();
    assert_eq!(conversations, conversation_tools());
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
