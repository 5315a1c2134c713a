//! The questions an MCP tool call puts to the user: may the tool be called, and what a
//! server asks for (elicitation), relayed to deputy's own client.

use deputy_protocol::McpToolCallItem;
use rmcp::model::{ElicitRequestParams, ElicitResult};

use crate::turn::{TurnContext, TurnStop};

/// A call the user did not let through.
pub(crate) struct Refusal {
    /// What the model is told.
    pub(crate) for_model: String,
    /// The item's error.
    pub(crate) for_item: String,
}

/// Asks whether the call of `item` may go ahead. `Ok(None)`: it may.
pub(crate) async fn ask(
    _ctx: &TurnContext,
    _item: &McpToolCallItem,
) -> Result<Option<Refusal>, TurnStop> {
    Ok(Some(Refusal {
        for_model: "The MCP tool call was not made: deputy cannot ask for its approval yet.".into(),
        for_item: "not approved".into(),
    }))
}

/// Relays a server's request for input to the user; `None` when nobody can answer.
pub(crate) async fn elicit(
    _ctx: &TurnContext,
    _server: &str,
    _request: ElicitRequestParams,
) -> Option<ElicitResult> {
    None
}
