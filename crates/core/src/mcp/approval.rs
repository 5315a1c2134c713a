//! The questions an MCP tool call puts to the user: may the tool be called, and what a
//! server asks for (elicitation), relayed to deputy's own client.

use deputy_protocol::{
    ApprovalDecision, FormAction, McpElicitationRequest, McpToolCallApprovalRequest,
    McpToolCallItem, Question,
};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};

use crate::context::{TurnContext, TurnStop};

/// What the user answered about one call.
pub(crate) enum Verdict {
    /// Call it.
    Approved,
    /// Call it, and this tool again in this thread without asking.
    ApprovedForSession,
    /// Do not call it; `for_model` is what the model is told.
    Refused {
        /// What the model is told, as the call's result.
        for_model: String,
    },
}

/// Asks whether the call of `item` may go ahead (`Err`: the user stopped the turn).
pub(crate) async fn ask(ctx: &TurnContext, item: &McpToolCallItem) -> Result<Verdict, TurnStop> {
    let question = Question::McpToolCall(McpToolCallApprovalRequest {
        call_id: item.call_id.clone(),
        turn_id: ctx.turn_id.clone(),
        server: item.server.clone(),
        tool: item.tool.clone(),
        arguments: item.arguments.clone(),
        reason: Some(
            "MCP servers run outside deputy's sandbox, and this tool may change things".into(),
        ),
    });
    let (decision, reason) = ctx.ask(&item.id, question).await.into_decision();
    match decision {
        ApprovalDecision::Approved => Ok(Verdict::Approved),
        ApprovalDecision::ApprovedForSession => Ok(Verdict::ApprovedForSession),
        ApprovalDecision::Abort => Err(TurnStop::Aborted),
        ApprovalDecision::Denied | ApprovalDecision::TimedOut => Ok(Verdict::Refused {
            for_model: match reason {
                Some(reason) => {
                    format!("The MCP tool was not called: approval was denied ({reason}).")
                }
                None => "The user declined this MCP tool call. Do not retry it; continue \
                         without it or ask the user."
                    .to_string(),
            },
        }),
    }
}

/// Relays a server's request for input, made while the call of `item` runs, to the user
/// and returns the answer. Only forms are relayed (deputy announces no URL elicitations).
pub(crate) async fn elicit(
    ctx: &TurnContext,
    item: &McpToolCallItem,
    request: ElicitRequestParams,
) -> ElicitResult {
    let ElicitRequestParams::FormElicitationParams {
        message,
        requested_schema,
        ..
    } = request
    else {
        return ElicitResult::new(ElicitationAction::Decline);
    };
    let question = Question::McpElicitation(McpElicitationRequest {
        call_id: item.call_id.clone(),
        turn_id: ctx.turn_id.clone(),
        server: item.server.clone(),
        message,
        requested_schema: serde_json::to_value(&requested_schema).unwrap_or_default(),
    });
    let (action, content) = ctx.ask(&item.id, question).await.into_form();
    let mut result = ElicitResult::new(match action {
        FormAction::Accept => ElicitationAction::Accept,
        FormAction::Decline => ElicitationAction::Decline,
        FormAction::Cancel => ElicitationAction::Cancel,
    });
    if action == FormAction::Accept {
        result.content = content;
    }
    result
}
