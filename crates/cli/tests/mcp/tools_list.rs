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
                            "description": "One part of a message: `text` with `text`, or `image` with one of `image_url`, `path` or `data` + `mimeType`.",
                            "type": "object",
                            "properties": {
                                "type": {
                                    "description": "What the part is: `text` or `image`.",
                                    "enum": ["text", "image"],
                                    "type": "string"
                                },
                                "text": {"description": "The text of a `text` part.", "type": "string"},
                                "image_url": {
                                    "description": "An image's URL: `data:image/…;base64,…` or an `http(s)` address.",
                                    "type": "string"
                                },
                                "path": {
                                    "description": "An image file (PNG, JPEG, GIF or WebP, at most 10 MiB), relative to the conversation's directory.",
                                    "type": "string"
                                },
                                "data": {
                                    "description": "An image's bytes in base64, as MCP's image content carries them.",
                                    "type": "string"
                                },
                                "mimeType": {"description": "The MIME type of `data`.", "type": "string"}
                            },
                            "required": ["type"]
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
fn tools_list_offers_codex_codex_reply_the_conversation_tools_and_review_exactly() {
    let mcp = Mcp::start();
    let mut listed = mcp.result(mcp.client.request("tools/list", json!({})));
    let mut conversations = listed["tools"]
        .as_array_mut()
        .map(|tools| tools.split_off(2.min(tools.len())))
        .unwrap_or_default();
    let review = conversations.pop();
    assert_eq!(conversations, conversation_tools());
    assert_eq!(review, Some(review_tool()));
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

/// The `review` tool: a target that is a string or a one-key object, and an output
/// schema naming every field of a successful result.
fn review_tool() -> Value {
    json!({
        "name": "review",
        "title": "Review",
        "description": "Review a change in a git repository: the uncommitted changes (default), the changes against a base branch, one commit, or what custom instructions describe. An isolated reviewer reads the diff (and may run read-only commands) and returns findings by priority (0 = most urgent) with file and line, and an overall verdict. Failures (not a git repository, an unknown branch or commit) are errors without structured content.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "cwd": {
                    "description": "Directory inside the git repository to review; a relative path resolves against the server's working directory.",
                    "type": "string"
                },
                "target": {
                    "description": "What to review (default \"uncommitted\").",
                    "oneOf": [
                        {
                            "const": "uncommitted",
                            "description": "\"uncommitted\": the staged, unstaged and untracked changes against HEAD.",
                            "type": "string"
                        },
                        {
                            "additionalProperties": false,
                            "description": "{\"base_branch\": BRANCH}: the changes since the merge base with BRANCH.",
                            "properties": {"base_branch": {"type": "string"}},
                            "required": ["base_branch"],
                            "type": "object"
                        },
                        {
                            "additionalProperties": false,
                            "description": "{\"commit\": SHA}: the changes one commit made.",
                            "properties": {"commit": {"type": "string"}},
                            "required": ["commit"],
                            "type": "object"
                        },
                        {
                            "additionalProperties": false,
                            "description": "{\"custom\": INSTRUCTIONS}: whatever the instructions ask to review (no diff is computed).",
                            "properties": {"custom": {"type": "string"}},
                            "required": ["custom"],
                            "type": "object"
                        }
                    ]
                },
                "prompt": {
                    "description": "Extra instructions for the reviewer (what to focus on).",
                    "type": "string"
                },
                "model": {
                    "description": "Model to review with, instead of `review_model` or the configured model.",
                    "type": "string"
                }
            }
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "threadId": {
                    "description": "The review's thread: `codex-reply` continues it.",
                    "type": "string"
                },
                "findings": {
                    "default": [],
                    "description": "What the reviewer found, most important first.",
                    "type": "array",
                    "items": {
                        "description": "One problem the reviewer found.",
                        "type": "object",
                        "properties": {
                            "title": {
                                "description": "A short imperative title (≤ 80 characters).",
                                "type": "string"
                            },
                            "body": {
                                "description": "Markdown: why it is a problem.",
                                "type": "string"
                            },
                            "confidence_score": {
                                "default": 0.0,
                                "description": "How sure the reviewer is, 0–1.",
                                "type": "number"
                            },
                            "priority": {
                                "default": 0,
                                "description": "0 (drop everything) to 3 (nice to have).",
                                "maximum": 3,
                                "minimum": 0,
                                "type": "integer"
                            },
                            "code_location": {
                                "description": "Where it is.",
                                "type": "object",
                                "properties": {
                                    "absolute_file_path": {
                                        "description": "The file.",
                                        "type": "string"
                                    },
                                    "line_range": {
                                        "description": "The lines.",
                                        "type": "object",
                                        "properties": {
                                            "start": {
                                                "description": "First line.",
                                                "minimum": 0,
                                                "type": "integer"
                                            },
                                            "end": {
                                                "description": "Last line.",
                                                "minimum": 0,
                                                "type": "integer"
                                            }
                                        },
                                        "required": ["start", "end"]
                                    }
                                },
                                "required": ["absolute_file_path", "line_range"]
                            }
                        },
                        "required": ["title", "body", "confidence_score", "priority", "code_location"]
                    }
                },
                "overall_correctness": {
                    "default": "",
                    "description": "`\"patch is correct\"` or `\"patch is incorrect\"` (empty when the answer could not be read).",
                    "type": "string"
                },
                "overall_explanation": {
                    "default": "",
                    "description": "Why, in a few sentences (the reviewer's raw answer when it could not be read).",
                    "type": "string"
                },
                "overall_confidence_score": {
                    "default": 0.0,
                    "description": "How sure the reviewer is of the verdict, 0–1.",
                    "type": "number"
                }
            },
            "required": [
                "findings",
                "overall_confidence_score",
                "overall_correctness",
                "overall_explanation",
                "threadId"
            ]
        }
    })
}
