//! A server's tools as one tool of the registry: the namespace `mcp__<server>__` holding
//! a function per tool (flat `mcp__<server>__<tool>` names on Chat). A call is an item of
//! the turn (`mcp_tool_call`): asked for, approved or declined under the thread's policy,
//! sent, and completed with the server's result or why there is none.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use deputy_protocol::{
    AskForApproval, FunctionOutput, McpToolCallItem, McpToolCallResult, McpToolCallStatus,
    ThreadItem,
};
use futures::future::BoxFuture;
use rmcp::model::{CallToolResult, JsonObject, Tool};
use serde_json::Value;
use tokio::sync::mpsc;

use super::approval::Verdict;
use super::client::Elicitation;
use super::names;
use super::output::tool_output;
use super::schema::sanitize_input_schema;
use super::server::{CallError, McpServer};
use crate::client::{FunctionTool, NamespaceTool, ToolSpec};
use crate::context::{TurnContext, TurnStop, new_item_id};
use crate::sync::lock;
use crate::tools::{ToolCall, ToolHandler};

/// One server's tools, for the model.
pub(crate) struct ServerTools {
    server: Arc<McpServer>,
    namespace: String,
    description: String,
    tools: Vec<Offered>,
    /// The tools (server names) the user approved for the rest of the thread.
    approved: Mutex<HashSet<String>>,
}

/// One tool as the model is offered it.
struct Offered {
    /// The name the model calls it by (within the namespace).
    model_name: String,
    /// Its name on the server.
    name: String,
    description: String,
    parameters: Arc<Value>,
    /// Its annotations say it changes nothing (`readOnlyHint: true`).
    read_only: bool,
}

impl ServerTools {
    /// The tools of `server` that its configuration offers, from its listing; `None` when
    /// it offers none.
    pub(crate) fn new(
        server: Arc<McpServer>,
        tools: &[Tool],
        instructions: Option<&str>,
    ) -> Option<Self> {
        let offered: Vec<&Tool> = tools
            .iter()
            .filter(|tool| server.config.offers_tool(&tool.name))
            .collect();
        if offered.is_empty() {
            return None;
        }
        let namespace = names::namespace(&server.name);
        let model_names = names::tool_names(&namespace, offered.iter().map(|t| t.name.as_ref()));
        let tools = offered
            .into_iter()
            .zip(model_names)
            .map(|(tool, model_name)| Offered {
                model_name,
                name: tool.name.to_string(),
                description: tool
                    .description
                    .as_deref()
                    .or(tool.title.as_deref())
                    .unwrap_or_default()
                    .to_string(),
                parameters: Arc::new(sanitize_input_schema(&tool.input_schema)),
                read_only: tool
                    .annotations
                    .as_ref()
                    .and_then(|a| a.read_only_hint)
                    .unwrap_or(false),
            })
            .collect();
        let description = instructions
            .map(str::to_string)
            .unwrap_or_else(|| format!("Tools of the MCP server `{}`.", server.name));
        Some(Self {
            server,
            namespace,
            description,
            tools,
            approved: Mutex::default(),
        })
    }
}

/// Whether an MCP tool call asks first under `policy`: MCP servers run outside the sandbox,
/// so only a tool that says it changes nothing runs unasked, and only where the policy
/// lets the model act on its own.
pub(crate) fn asks_first(policy: AskForApproval, read_only: bool) -> bool {
    match policy {
        AskForApproval::Untrusted => true,
        AskForApproval::OnRequest | AskForApproval::OnFailure => !read_only,
        AskForApproval::Never => false,
    }
}

impl ToolHandler for ServerTools {
    fn spec(&self) -> ToolSpec {
        ToolSpec::Namespace(NamespaceTool {
            name: self.namespace.clone(),
            description: self.description.clone(),
            tools: self
                .tools
                .iter()
                .map(|tool| FunctionTool {
                    name: tool.model_name.clone(),
                    description: tool.description.clone(),
                    parameters: tool.parameters.clone(),
                })
                .collect(),
        })
    }

    fn handle<'a>(
        &'a self,
        ctx: &'a TurnContext,
        call: ToolCall,
    ) -> BoxFuture<'a, Result<FunctionOutput, TurnStop>> {
        Box::pin(async move {
            let Some(tool) = self.tools.iter().find(|t| t.model_name == call.name) else {
                return Ok(FunctionOutput::Text(format!(
                    "unsupported call: the MCP server `{}` has no tool `{}`",
                    self.server.name, call.name
                )));
            };
            let arguments = match arguments_of(&call) {
                Ok(arguments) => arguments,
                Err(message) => return Ok(FunctionOutput::Text(message)),
            };
            let mut item = McpToolCallItem::asked(
                new_item_id(),
                call.call_id.clone(),
                self.server.name.clone(),
                tool.name.clone(),
                arguments.clone().map(Value::Object),
            );
            ctx.item_started(ThreadItem::McpToolCall(Box::new(item.clone())));
            if asks_first(ctx.config.approval_policy, tool.read_only)
                && !lock(&self.approved).contains(&tool.name)
            {
                let verdict = super::approval::ask(ctx, &item).await;
                let refused = match verdict {
                    Ok(Verdict::Approved) => None,
                    Ok(Verdict::ApprovedForSession) => {
                        lock(&self.approved).insert(tool.name.clone());
                        None
                    }
                    Ok(Verdict::Refused { for_model }) => Some(Ok(for_model)),
                    Err(stop) => Some(Err(stop)),
                };
                if let Some(refused) = refused {
                    item.status = McpToolCallStatus::Failed;
                    item.error = Some("declined by the user".into());
                    ctx.item_completed(ThreadItem::McpToolCall(Box::new(item)));
                    return refused.map(FunctionOutput::Text);
                }
            }
            item.started = true;
            ctx.item_updated(ThreadItem::McpToolCall(Box::new(item.clone())));
            let start = Instant::now();
            let outcome = self.run(ctx, &item, arguments).await;
            item.duration = Some(start.elapsed());
            let output = match outcome {
                Ok(result) => {
                    let output = tool_output(&result, ctx.config.tool_output_token_limit);
                    item.status = McpToolCallStatus::Completed;
                    item.result = Some(result);
                    output
                }
                Err(why) => {
                    let message = format!(
                        "the call of `{}` on the MCP server `{}` failed: {why}",
                        tool.name, self.server.name
                    );
                    item.status = McpToolCallStatus::Failed;
                    item.error = Some(message.clone());
                    FunctionOutput::Text(message)
                }
            };
            ctx.item_completed(ThreadItem::McpToolCall(Box::new(item)));
            Ok(output)
        })
    }
}

impl ServerTools {
    /// Calls the tool within `tool_timeout_sec`, relaying the server's questions to the
    /// user meanwhile (the time a question waits for its answer does not count).
    async fn run(
        &self,
        ctx: &TurnContext,
        item: &McpToolCallItem,
        arguments: Option<JsonObject>,
    ) -> Result<McpToolCallResult, String> {
        let timeout = self.server.config.tool_timeout;
        let links = self.server.links.clone();
        let (asker, mut questions) = mpsc::channel::<Elicitation>(4);
        let id = links.next_id();
        links.add_asker(id, asker);
        let _asking = AskerGuard { links, id };
        let call = self.server.call_tool(&item.tool, arguments);
        tokio::pin!(call);
        let mut deadline = tokio::time::Instant::now() + timeout;
        loop {
            tokio::select! {
                result = &mut call => {
                    return result.map(to_result).map_err(|err| match err {
                        CallError::Died(why) => format!(
                            "the server stopped: {why}; it is restarted on the next call"
                        ),
                        CallError::Unavailable(why) => format!("the server is unavailable: {why}"),
                        CallError::Server(why) => why,
                    });
                }
                () = tokio::time::sleep_until(deadline) => {
                    return Err(format!(
                        "no answer within {} s (tool_timeout_sec); the call was cancelled",
                        timeout.as_secs_f64()
                    ));
                }
                Some(question) = questions.recv() => {
                    let asked = tokio::time::Instant::now();
                    let answer = super::approval::elicit(ctx, item, question.request).await;
                    deadline += asked.elapsed();
                    let _ = question.reply.send(answer);
                }
            }
        }
    }
}

/// Stops the server's questions from reaching a call that is over.
struct AskerGuard {
    links: Arc<super::client::Links>,
    id: u64,
}

impl Drop for AskerGuard {
    fn drop(&mut self) {
        self.links.remove_asker(self.id);
    }
}

/// The call's arguments as the JSON object MCP wants (none for an empty string); `Err` is
/// the text for the model.
fn arguments_of(call: &ToolCall) -> Result<Option<JsonObject>, String> {
    match &call.payload {
        crate::tools::ToolPayload::Function { arguments } if arguments.trim().is_empty() => {
            Ok(None)
        }
        _ => match call.arguments::<Value>()? {
            Value::Object(map) => Ok(Some(map)),
            Value::Null => Ok(None),
            other => Err(format!(
                "the arguments of an MCP tool must be a JSON object, not {other}"
            )),
        },
    }
}

/// The server's result in the protocol's (MCP's own) shape.
fn to_result(result: CallToolResult) -> McpToolCallResult {
    McpToolCallResult {
        content: result
            .content
            .iter()
            .filter_map(|block| serde_json::to_value(block).ok())
            .collect(),
        structured_content: result.structured_content,
        is_error: result.is_error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approval_matrix() {
        use AskForApproval::*;
        for (policy, read_only, asks) in [
            (Untrusted, true, true),
            (Untrusted, false, true),
            (OnRequest, true, false),
            (OnRequest, false, true),
            (OnFailure, true, false),
            (OnFailure, false, true),
            (Never, true, false),
            (Never, false, false),
        ] {
            assert_eq!(
                asks_first(policy, read_only),
                asks,
                "{policy:?} read_only={read_only}"
            );
        }
    }
}
