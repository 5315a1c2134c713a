//! The tools of a turn: which are offered to the model, and which handler runs a call.
//!
//! A tool is a [`ToolHandler`] — its spec and how it handles a call. Each turn builds
//! its [`ToolRegistry`] from the model's family (the built-in tools it is offered, in
//! their order) and the handlers its thread was given at run time ([`ThreadTools`]), and
//! lists the registry's specs in every request of the turn. A call is routed by the
//! name the model used; a namespaced function is found by `<namespace><name>`, which is
//! also the flat name it has where namespaces do not exist (Chat). A tool that keeps
//! state between calls keeps it in the thread ([`ToolState`]), never in the handler or a
//! global, so that it lives and dies with its thread (`crate::context::ToolState`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use deputy_protocol::{FunctionOutput, OutputContentItem, ResponseItem, ToolCallKind};
use futures::future::BoxFuture;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::client::{HostedTool, ToolSpec};
use crate::context::{TurnContext, TurnStop};
use crate::model_family::ModelFamily;
use crate::sync::lock;

/// What a tool call returns to the model: text, or text and images.
pub(crate) type ToolOutput = FunctionOutput;

/// What the model sent with a call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ToolPayload {
    /// JSON arguments (a function call).
    Function {
        /// The arguments as the model wrote them.
        arguments: String,
    },
    /// Raw text (a freeform tool's call).
    Freeform {
        /// The text as the model wrote it.
        input: String,
    },
}

/// One call of a tool by the model.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolCall {
    /// Ties the call to its output.
    pub(crate) call_id: String,
    /// The tool's name (within its namespace, when it has one).
    pub(crate) name: String,
    /// The namespace the model called the tool in.
    pub(crate) namespace: Option<String>,
    /// What the model sent.
    pub(crate) payload: ToolPayload,
    /// Which output item answers the call.
    kind: ToolCallKind,
}

impl ToolCall {
    /// The call an output item of the model's asks for; `None` for other items.
    pub(crate) fn from_item(item: &ResponseItem) -> Option<Self> {
        match item {
            ResponseItem::FunctionCall {
                name,
                namespace,
                arguments,
                call_id,
                ..
            } => Some(Self {
                call_id: call_id.clone(),
                name: name.clone(),
                namespace: namespace.clone(),
                payload: ToolPayload::Function {
                    arguments: arguments.clone(),
                },
                kind: ToolCallKind::Function,
            }),
            ResponseItem::CustomToolCall {
                name,
                input,
                call_id,
                ..
            } => Some(Self {
                call_id: call_id.clone(),
                name: name.clone(),
                namespace: None,
                payload: ToolPayload::Freeform {
                    input: input.clone(),
                },
                kind: ToolCallKind::Custom,
            }),
            ResponseItem::Message { .. }
            | ResponseItem::Reasoning { .. }
            | ResponseItem::FunctionCallOutput { .. }
            | ResponseItem::CustomToolCallOutput { .. }
            | ResponseItem::Other(_) => None,
        }
    }

    /// The name the registry knows the tool by: `<namespace><name>`, or the name.
    fn flat_name(&self) -> String {
        match &self.namespace {
            Some(namespace) => format!("{namespace}{}", self.name),
            None => self.name.clone(),
        }
    }

    /// The call's JSON arguments as `T`; `Err` is the text telling the model why they
    /// cannot be read.
    pub(crate) fn arguments<T: DeserializeOwned>(&self) -> Result<T, String> {
        match &self.payload {
            ToolPayload::Function { arguments } => serde_json::from_str(arguments).map_err(|e| {
                format!("failed to parse function arguments: {e}; arguments were: {arguments}")
            }),
            ToolPayload::Freeform { .. } => Err(format!(
                "`{}` takes JSON arguments, not freeform text",
                self.name
            )),
        }
    }
}

/// One tool: what the model is offered, and how a call of it is handled.
pub(crate) trait ToolHandler: Send + Sync {
    /// The tool as offered to the model. A [`ToolSpec::Namespace`] handler handles the
    /// calls of every function in it; a hosted tool has no handler
    /// ([`ToolRegistry::offer_hosted`]).
    fn spec(&self) -> ToolSpec;

    /// Runs one call. Every failure the model should hear about is output; `Err` only
    /// stops the turn (the user answered an approval with `abort`).
    fn handle<'a>(
        &'a self,
        ctx: &'a TurnContext,
        call: ToolCall,
    ) -> BoxFuture<'a, Result<ToolOutput, TurnStop>>;
}

/// Why a handler cannot be added.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum ToolRegistryError {
    /// Another tool already has the name.
    #[error("a tool named `{0}` is already registered")]
    Duplicate(String),
    /// A hosted tool runs at the provider: it is offered, not handled.
    #[error("a hosted tool has no handler; offer it with `offer_hosted`")]
    Hosted,
}

/// Whether a handler takes JSON arguments or text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Takes {
    Json,
    Text,
}

/// The tools of one turn.
pub(crate) struct ToolRegistry {
    /// What the model is offered, in order.
    offered: Vec<ToolSpec>,
    handlers: Vec<(Arc<dyn ToolHandler>, Takes)>,
    /// Flat name (`<namespace><name>` for a namespace's functions) → handler.
    by_name: HashMap<String, Route>,
    /// Whether image parts of outputs reach the model (else they become a note).
    images: bool,
}

/// Where a name leads.
#[derive(Debug, Clone)]
struct Route {
    /// The handler's index.
    at: usize,
    /// For a namespace's function: the namespace and the function's own name.
    in_namespace: Option<(String, String)>,
}

/// What an image in a tool output becomes for a model that takes none.
const IMAGE_OMITTED: &str = "[an image was left out: this model does not take images]";

impl ToolRegistry {
    /// A registry offering nothing yet, for a model of `family`.
    pub(crate) fn new(family: &ModelFamily) -> Self {
        Self::with_images(family.images)
    }

    fn with_images(images: bool) -> Self {
        Self {
            offered: Vec::new(),
            handlers: Vec::new(),
            by_name: HashMap::new(),
            images,
        }
    }

    /// The registry of a turn: the built-in tools of `family`, then the handlers the
    /// thread was given (one whose name is taken is left out, with a log line).
    pub(crate) fn for_turn(family: &ModelFamily, thread: &ThreadTools) -> Self {
        let mut registry = Self::new(family);
        for handler in super::builtin::builtin_tools(family) {
            if let Err(err) = registry.register(handler) {
                tracing::warn!(%err, "a built-in tool is not offered");
            }
        }
        if let Some(external_web_access) = family.hosted_web_search {
            registry.offer_hosted(HostedTool::WebSearch {
                external_web_access,
            });
        }
        for handler in thread.handlers() {
            if let Err(err) = registry.register(handler) {
                tracing::warn!(%err, "a tool of the thread is not offered");
            }
        }
        registry
    }

    /// Adds a handler; its tool is listed after those already there.
    pub(crate) fn register(
        &mut self,
        handler: Arc<dyn ToolHandler>,
    ) -> Result<(), ToolRegistryError> {
        let spec = handler.spec();
        let at = self.handlers.len();
        let plain = |name: &str| {
            (
                name.to_string(),
                Route {
                    at,
                    in_namespace: None,
                },
            )
        };
        let (routes, takes): (Vec<(String, Route)>, Takes) = match &spec {
            ToolSpec::Function(tool) => (vec![plain(&tool.name)], Takes::Json),
            ToolSpec::Freeform(tool) => (vec![plain(&tool.name)], Takes::Text),
            ToolSpec::Namespace(namespace) => (
                namespace
                    .tools
                    .iter()
                    .map(|tool| {
                        let route = Route {
                            at,
                            in_namespace: Some((namespace.name.clone(), tool.name.clone())),
                        };
                        (format!("{}{}", namespace.name, tool.name), route)
                    })
                    .collect(),
                Takes::Json,
            ),
            ToolSpec::Hosted(_) => return Err(ToolRegistryError::Hosted),
        };
        for (name, _) in &routes {
            if self.by_name.contains_key(name)
                || routes.iter().filter(|(n, _)| n == name).count() > 1
            {
                return Err(ToolRegistryError::Duplicate(name.clone()));
            }
        }
        self.by_name.extend(routes);
        self.handlers.push((handler, takes));
        self.offered.push(spec);
        Ok(())
    }

    /// Offers a tool the provider runs itself (its calls are the provider's output items).
    pub(crate) fn offer_hosted(&mut self, tool: HostedTool) {
        self.offered.push(ToolSpec::Hosted(tool));
    }

    /// What the model is offered, in order.
    pub(crate) fn specs(&self) -> Vec<ToolSpec> {
        self.offered.clone()
    }

    /// Runs `call` with its handler and returns the item answering it. Only an `abort`
    /// approval stops the turn; a call of an unknown tool is told what exists.
    pub(crate) async fn dispatch(
        &self,
        ctx: &TurnContext,
        mut call: ToolCall,
    ) -> Result<ResponseItem, TurnStop> {
        let (call_id, kind) = (call.call_id.clone(), call.kind);
        let output = match self.by_name.get(&call.flat_name()) {
            None => ToolOutput::Text(format!(
                "unsupported call: `{}` is not a tool here; available tools: {}",
                call.flat_name(),
                self.callable_names().join(", ")
            )),
            Some(route) => {
                // A namespace's function called by its flat name (Chat) reaches its
                // handler as it would have been called in the namespace.
                if let Some((namespace, name)) = &route.in_namespace {
                    call.namespace = Some(namespace.clone());
                    call.name = name.clone();
                }
                let (handler, takes) = &self.handlers[route.at];
                match as_taken(&mut call, *takes) {
                    Ok(()) => handler.handle(ctx, call).await?,
                    Err(message) => ToolOutput::Text(message),
                }
            }
        };
        Ok(kind.output(call_id, self.fit_for_model(output)))
    }

    /// The names the model can call, in the order they are offered.
    fn callable_names(&self) -> Vec<&str> {
        let mut names: Vec<(usize, &str)> = self
            .by_name
            .iter()
            .map(|(name, route)| (route.at, name.as_str()))
            .collect();
        names.sort_unstable();
        names.into_iter().map(|(_, name)| name).collect()
    }

    /// The output as the model can take it: images become a note for a model without images.
    fn fit_for_model(&self, output: ToolOutput) -> ToolOutput {
        match output {
            FunctionOutput::Content(parts) if !self.images => FunctionOutput::Content(
                parts
                    .into_iter()
                    .map(|part| match part {
                        OutputContentItem::InputImage { .. } => OutputContentItem::InputText {
                            text: IMAGE_OMITTED.to_string(),
                        },
                        text @ OutputContentItem::InputText { .. } => text,
                    })
                    .collect(),
            ),
            other => other,
        }
    }
}

/// Hands a freeform tool its text where the wire made the call a function (Chat offers a
/// freeform tool as a function taking `input`); `Err` is the text for the model.
fn as_taken(call: &mut ToolCall, takes: Takes) -> Result<(), String> {
    #[derive(Deserialize)]
    struct FreeformArguments {
        input: String,
    }
    if takes == Takes::Text && matches!(call.payload, ToolPayload::Function { .. }) {
        let FreeformArguments { input } = call.arguments()?;
        call.payload = ToolPayload::Freeform { input };
    }
    Ok(())
}

/// The handlers a thread was given at run time, beside the built-in tools.
#[derive(Default)]
pub(crate) struct ThreadTools {
    added: Mutex<Vec<Arc<dyn ToolHandler>>>,
}

impl std::fmt::Debug for ThreadTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadTools")
            .field("added", &lock(&self.added).len())
            .finish()
    }
}

impl ThreadTools {
    /// Adds a handler for the thread's next turns; a name another added tool has is refused.
    pub(crate) fn add(&self, handler: Arc<dyn ToolHandler>) -> Result<(), ToolRegistryError> {
        let mut added = lock(&self.added);
        // A registry of the added handlers alone checks their names as a turn's would.
        let mut check = ToolRegistry::with_images(false);
        for existing in added.iter().chain([&handler]) {
            check.register(existing.clone())?;
        }
        added.push(handler);
        Ok(())
    }

    fn handlers(&self) -> Vec<Arc<dyn ToolHandler>> {
        lock(&self.added).clone()
    }
}

#[cfg(test)]
mod tests;
