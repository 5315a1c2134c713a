//! One model response: streamed, its message and reasoning items reported as they
//! come, a broken stream retried up to the provider's limit.

// Runs on the async runtime: no blocking std calls (see clippy.toml).
#![cfg_attr(not(test), warn(clippy::disallowed_methods))]

use std::time::Duration;

use deputy_protocol::{
    AgentMessageItem, CodexErrorInfo, ItemDeltaEvent, ReasoningItem, ReasoningSummary,
    ResponseItem, StreamErrorEvent, ThreadEventMsg, ThreadItem, TokenCountEvent, TokenUsage,
    TokenUsageInfo, WebSearchItem,
};
use futures::StreamExt;

use crate::client::{ModelError, Prompt, ResponseEvent, RetryNotice};
use crate::context::{TurnContext, TurnStop, new_item_id};

/// Whether a response's text is shown as it streams (message and reasoning items).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Visibility {
    /// A response of the conversation: its items are reported.
    Shown,
    /// The engine's own request (a summary): only usage and retries are reported.
    Quiet,
}

/// One complete model response.
pub(crate) struct Sampled {
    /// Its output items.
    pub(crate) items: Vec<ResponseItem>,
    /// Its usage, when the provider reported it.
    pub(crate) usage: Option<TokenUsage>,
}

/// Streams one model response, retrying a broken stream up to the provider's limit.
pub(crate) async fn sample_with_retries(
    ctx: &TurnContext,
    prompt: &Prompt,
    visibility: Visibility,
) -> Result<Sampled, TurnStop> {
    let max_retries = ctx.client.provider().stream_max_retries();
    let mut attempt = 0;
    loop {
        match sample_once(ctx, prompt, visibility).await {
            Ok(sampled) => return Ok(sampled),
            Err(ModelError::Stream(reason)) if attempt < max_retries => {
                attempt += 1;
                let delay = backoff(attempt);
                ctx.emit(ThreadEventMsg::StreamError(StreamErrorEvent {
                    message: format!(
                        "model stream broke ({reason}); retrying {attempt}/{max_retries} in {} ms",
                        delay.as_millis()
                    ),
                    codex_error_info: Some(CodexErrorInfo::ResponseStreamDisconnected {
                        http_status_code: None,
                    }),
                }));
                tokio::time::sleep(delay).await;
            }
            Err(err) => return Err(TurnStop::Model(err)),
        }
    }
}

fn backoff(attempt: u64) -> Duration {
    let base = 200u64.saturating_mul(1 << attempt.min(8).saturating_sub(1));
    let jitter = fastrand::u64(0..=base / 10);
    Duration::from_millis(base.min(10_000) + jitter)
}

/// The message and reasoning items one model response is streaming. An attempt that
/// breaks leaves its items unfinished; the retry streams the response again as new items.
#[derive(Default)]
struct StreamingItems {
    message: Option<AgentMessageItem>,
    reasoning: Option<ReasoningItem>,
}

impl StreamingItems {
    fn message_delta(&mut self, ctx: &TurnContext, delta: String) {
        let item = self.message.get_or_insert_with(|| {
            let item = AgentMessageItem {
                id: new_item_id(),
                text: String::new(),
            };
            ctx.item_started(ThreadItem::AgentMessage(item.clone()));
            item
        });
        item.text.push_str(&delta);
        ctx.emit(ThreadEventMsg::AgentMessageDelta(ItemDeltaEvent {
            item_id: item.id.clone(),
            delta,
        }));
    }

    fn reasoning_delta(&mut self, ctx: &TurnContext, delta: String) {
        let item = self.reasoning.get_or_insert_with(|| {
            let item = ReasoningItem {
                id: new_item_id(),
                text: String::new(),
            };
            ctx.item_started(ThreadItem::Reasoning(item.clone()));
            item
        });
        item.text.push_str(&delta);
        ctx.emit(ThreadEventMsg::ReasoningDelta(ItemDeltaEvent {
            item_id: item.id.clone(),
            delta,
        }));
    }

    /// Completes the streaming message with its final text (starting one if nothing streamed).
    fn message_done(&mut self, ctx: &TurnContext, text: String) {
        let id = match self.message.take() {
            Some(item) => item.id,
            None => {
                let id = new_item_id();
                ctx.item_started(ThreadItem::AgentMessage(AgentMessageItem {
                    id: id.clone(),
                    text: String::new(),
                }));
                id
            }
        };
        ctx.item_completed(ThreadItem::AgentMessage(AgentMessageItem { id, text }));
    }

    /// Completes the streaming reasoning with `text` when the provider sent a summary.
    fn reasoning_done(&mut self, ctx: &TurnContext, text: String) {
        if text.is_empty() {
            // No summary: the streamed text stays open and is completed with the response.
            return;
        }
        let id = match self.reasoning.take() {
            Some(item) => item.id,
            None => {
                let id = new_item_id();
                ctx.item_started(ThreadItem::Reasoning(ReasoningItem {
                    id: id.clone(),
                    text: String::new(),
                }));
                id
            }
        };
        ctx.item_completed(ThreadItem::Reasoning(ReasoningItem { id, text }));
    }

    /// Completes whatever the response left open.
    fn finish(&mut self, ctx: &TurnContext) {
        if let Some(item) = self.reasoning.take() {
            ctx.item_completed(ThreadItem::Reasoning(item));
        }
        if let Some(item) = self.message.take() {
            ctx.item_completed(ThreadItem::AgentMessage(item));
        }
    }
}

async fn sample_once(
    ctx: &TurnContext,
    prompt: &Prompt,
    visibility: Visibility,
) -> Result<Sampled, ModelError> {
    let shown = visibility == Visibility::Shown;
    let on_retry = |notice: RetryNotice| {
        ctx.emit(ThreadEventMsg::StreamError(StreamErrorEvent {
            message: format!(
                "{}; retrying {}/{} in {} ms",
                notice.reason,
                notice.attempt,
                notice.max_retries,
                notice.delay.as_millis()
            ),
            codex_error_info: Some(CodexErrorInfo::ResponseStreamDisconnected {
                http_status_code: notice.http_status,
            }),
        }));
    };
    let mut stream = ctx.client.stream(prompt, &on_retry).await?;
    let mut items = Vec::new();
    let mut streaming = StreamingItems::default();
    while let Some(event) = stream.next().await {
        match event? {
            ResponseEvent::Created => {}
            ResponseEvent::OutputTextDelta(_) | ResponseEvent::ReasoningDelta(_) if !shown => {}
            ResponseEvent::OutputTextDelta(delta) => streaming.message_delta(ctx, delta),
            ResponseEvent::ReasoningDelta(delta) => streaming.reasoning_delta(ctx, delta),
            ResponseEvent::OutputItemDone(item) if !shown => items.push(item),
            ResponseEvent::OutputItemDone(item) => {
                match &item {
                    ResponseItem::Message { role, .. } if role == "assistant" => {
                        streaming.message_done(ctx, item.message_text().unwrap_or_default());
                    }
                    ResponseItem::Reasoning { summary, .. } => {
                        let text: String = summary
                            .iter()
                            .map(|ReasoningSummary::SummaryText { text }| text.as_str())
                            .collect();
                        streaming.reasoning_done(ctx, text);
                    }
                    ResponseItem::Other(hosted) => {
                        if let Some(search) = web_search(hosted) {
                            ctx.item_started(ThreadItem::WebSearch(search.clone()));
                            ctx.item_completed(ThreadItem::WebSearch(search));
                        }
                    }
                    _ => {}
                }
                items.push(item);
            }
            ResponseEvent::Completed { token_usage, .. } => {
                streaming.finish(ctx);
                let info = token_usage.map(|last| TokenUsageInfo {
                    total_token_usage: ctx.session.add_usage(&last),
                    last_token_usage: last,
                    model_context_window: ctx.config.context_window(),
                });
                ctx.emit(ThreadEventMsg::TokenCount(Box::new(TokenCountEvent {
                    info,
                    rate_limits: None,
                })));
                return Ok(Sampled {
                    items,
                    usage: token_usage,
                });
            }
        }
    }
    Err(ModelError::Stream(
        "stream ended before the response completed".into(),
    ))
}

/// The search a provider's `web_search_call` output item reports, when `item` is one.
/// It arrives finished, so its item starts and completes at once.
fn web_search(item: &serde_json::Value) -> Option<WebSearchItem> {
    if item.get("type").and_then(serde_json::Value::as_str) != Some("web_search_call") {
        return None;
    }
    let text = |value: &serde_json::Value| value.as_str().map(str::to_string);
    let action = &item["action"];
    Some(WebSearchItem {
        id: text(&item["id"]).unwrap_or_else(new_item_id),
        query: text(&action["query"])
            .or_else(|| text(&action["url"]))
            .unwrap_or_default(),
    })
}
