//! `list_mcp_resources`, `list_mcp_resource_templates` and `read_mcp_resource`: the
//! resources of the thread's MCP servers, offered whenever a server is configured, with the
//! schemas Codex 0.125 gives them. Reading a resource changes nothing: none of them asks.

use std::collections::BTreeMap;
use std::sync::Arc;

use deputy_protocol::FunctionOutput;
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::server::{CallError, McpServer};
use crate::client::{FunctionTool, ToolSpec};
use crate::context::{TurnContext, TurnStop};
use crate::exec::truncate_middle;
use crate::tools::{ToolCall, ToolHandler};

/// Which of the three tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResourceTool {
    /// `list_mcp_resources`.
    List,
    /// `list_mcp_resource_templates`.
    ListTemplates,
    /// `read_mcp_resource`.
    Read,
}

/// One of the resource tools over the thread's servers.
pub(crate) struct Resources {
    tool: ResourceTool,
    servers: Arc<BTreeMap<String, Arc<McpServer>>>,
}

impl Resources {
    /// The three tools over `servers`.
    pub(crate) fn all(servers: BTreeMap<String, Arc<McpServer>>) -> Vec<Self> {
        let servers = Arc::new(servers);
        [
            ResourceTool::List,
            ResourceTool::ListTemplates,
            ResourceTool::Read,
        ]
        .into_iter()
        .map(|tool| Self {
            tool,
            servers: servers.clone(),
        })
        .collect()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    #[serde(default)]
    server: Option<String>,
    #[serde(default)]
    cursor: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    server: String,
    uri: String,
}

impl ToolHandler for Resources {
    fn spec(&self) -> ToolSpec {
        let listing = json!({"type": "object", "properties": {
            "cursor": {"type": "string", "description": "The `nextCursor` of the previous page (with its `server`)."},
            "server": {"type": "string", "description": "The MCP server; all of them when left out."},
        }, "additionalProperties": false});
        let (name, description, parameters) = match self.tool {
            ResourceTool::List => (
                "list_mcp_resources",
                "Lists the resources the MCP servers offer (files, records, documents…), \
                 which `read_mcp_resource` reads. Prefer them to web searches for what a \
                 server knows.",
                listing,
            ),
            ResourceTool::ListTemplates => (
                "list_mcp_resource_templates",
                "Lists the resource templates (parameterised URIs) the MCP servers offer.",
                listing,
            ),
            ResourceTool::Read => (
                "read_mcp_resource",
                "Reads one resource of an MCP server by its URI.",
                json!({"type": "object", "properties": {
                    "server": {"type": "string", "description": "The MCP server, as `list_mcp_resources` names it."},
                    "uri": {"type": "string", "description": "The resource's URI."},
                }, "required": ["server", "uri"], "additionalProperties": false}),
            ),
        };
        ToolSpec::Function(FunctionTool {
            name: name.into(),
            description: description.into(),
            parameters: Arc::new(parameters),
        })
    }

    fn handle<'a>(
        &'a self,
        ctx: &'a TurnContext,
        call: ToolCall,
    ) -> BoxFuture<'a, Result<FunctionOutput, TurnStop>> {
        Box::pin(async move {
            let answer = match self.tool {
                ResourceTool::List | ResourceTool::ListTemplates => match call.arguments() {
                    Ok(args) => self.list(args).await,
                    Err(message) => Err(message),
                },
                ResourceTool::Read => match call.arguments() {
                    Ok(args) => self.read(args).await,
                    Err(message) => Err(message),
                },
            };
            let text = answer.unwrap_or_else(|message| message);
            let budget = ctx.config.tool_output_token_limit.saturating_mul(4);
            Ok(FunctionOutput::Text(truncate_middle(&text, budget).0))
        })
    }
}

impl Resources {
    fn server(&self, name: &str) -> Result<&Arc<McpServer>, String> {
        self.servers.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.servers.keys().map(String::as_str).collect();
            format!(
                "there is no MCP server `{name}`; the servers are: {}",
                known.join(", ")
            )
        })
    }

    async fn list(&self, args: ListArgs) -> Result<String, String> {
        let templates = self.tool == ResourceTool::ListTemplates;
        let key = if templates {
            "resourceTemplates"
        } else {
            "resources"
        };
        let page = |server: &Arc<McpServer>, cursor: Option<String>| {
            let server = server.clone();
            async move {
                let page = if templates {
                    server
                        .list_resource_templates(cursor)
                        .await
                        .map(|r| (json!(r.resource_templates), r.next_cursor))
                } else {
                    server
                        .list_resources(cursor)
                        .await
                        .map(|r| (json!(r.resources), r.next_cursor))
                };
                page.map_err(|err: CallError| err.to_string())
            }
        };
        match args.server {
            Some(name) => {
                let server = self.server(&name)?;
                let (items, next) = page(server, args.cursor)
                    .await
                    .map_err(|why| format!("MCP server `{name}`: {why}"))?;
                let mut answer = json!({"server": name, key: with_server(items, &name)});
                if let Some(next) = next {
                    answer["nextCursor"] = json!(next);
                }
                Ok(answer.to_string())
            }
            None if args.cursor.is_some() => {
                Err("a `cursor` continues one server's listing: give its `server` too".into())
            }
            None => {
                let mut all = Vec::new();
                let mut errors = serde_json::Map::new();
                let pages =
                    futures::future::join_all(self.servers.iter().map(
                        |(name, server)| async move { (name.clone(), page(server, None).await) },
                    ))
                    .await;
                for (name, page) in pages {
                    match page {
                        Ok((items, next)) => {
                            if let Value::Array(items) = with_server(items, &name) {
                                all.extend(items);
                            }
                            if next.is_some() {
                                errors.insert(
                                    name.clone(),
                                    json!("more on later pages: list this server with `server`"),
                                );
                            }
                        }
                        Err(why) => {
                            errors.insert(name, json!(why));
                        }
                    }
                }
                let mut answer = json!({ key: all });
                if !errors.is_empty() {
                    answer["notes"] = Value::Object(errors);
                }
                Ok(answer.to_string())
            }
        }
    }

    async fn read(&self, args: ReadArgs) -> Result<String, String> {
        let server = self.server(&args.server)?;
        let result = server
            .read_resource(&args.uri)
            .await
            .map_err(|why| format!("MCP server `{}`: {why}", args.server))?;
        Ok(
            json!({"server": args.server, "uri": args.uri, "contents": result.contents})
                .to_string(),
        )
    }
}

/// `items` (a JSON array of objects) with `"server": name` in each.
fn with_server(items: Value, name: &str) -> Value {
    match items {
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|mut item| {
                    if let Value::Object(map) = &mut item {
                        map.insert("server".into(), json!(name));
                    }
                    item
                })
                .collect(),
        ),
        other => other,
    }
}
