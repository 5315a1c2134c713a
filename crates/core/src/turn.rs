//! One turn: model request → stream → run the tool calls → send outputs back,
//! until the model answers without calling a tool.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use deputy_protocol::{
    AgentMessageEvent, AgentReasoningEvent, DeltaEvent, ErrorEvent, EventMsg, InputItem,
    ReasoningSummary, ResponseItem, StreamErrorEvent, TaskCompleteEvent, TaskStartedEvent,
    TokenCountEvent, TokenUsageInfo, TurnAbortReason, TurnAbortedEvent, UserMessageEvent,
};
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::client::{ModelError, Prompt, ResponseEvent, RetryNotice};
use crate::instructions;
use crate::thread::{Session, lock};
use crate::tools::{self, TurnDiffTracker};

/// How a turn ended early.
#[derive(Debug)]
pub(crate) enum TurnStop {
    /// The user answered an approval with `abort`.
    Aborted,
    /// The model call failed for good.
    Model(ModelError),
}

/// What one turn's tool handlers need.
pub(crate) struct TurnContext {
    pub(crate) session: Arc<Session>,
    pub(crate) sub_id: String,
    pub(crate) turn_id: String,
    pub(crate) cancel: CancellationToken,
    pub(crate) diff: std::sync::Mutex<TurnDiffTracker>,
}

impl TurnContext {
    /// Emits an event tagged with this turn's submission id.
    pub(crate) fn emit(&self, msg: EventMsg) {
        self.session.events.send(&self.sub_id, msg);
    }
}

/// Runs a turn to its end, emitting exactly one turn-ending event.
pub(crate) async fn run_turn(
    session: Arc<Session>,
    sub_id: String,
    items: Vec<InputItem>,
    cancel: CancellationToken,
) {
    let ctx = TurnContext {
        turn_id: sub_id.clone(),
        sub_id,
        session,
        cancel: cancel.clone(),
        diff: std::sync::Mutex::default(),
    };
    ctx.session.record_turn_context(&ctx.turn_id);
    ctx.emit(EventMsg::TaskStarted(TaskStartedEvent {
        turn_id: ctx.turn_id.clone(),
        model_context_window: ctx.session.config.model_context_window,
    }));
    let text = items
        .into_iter()
        .map(|InputItem::Text { text }| text)
        .collect::<Vec<_>>()
        .join("\n");
    ctx.emit(EventMsg::UserMessage(UserMessageEvent {
        message: text.clone(),
    }));
    ctx.session.record([ResponseItem::user_text(text)]);

    let outcome = tokio::select! {
        outcome = turn_loop(&ctx) => Some(outcome),
        () = cancel.cancelled() => None,
    };
    ctx.session.approvals.clear_pending();
    let abort = |reason| {
        close_dangling_calls(&ctx.session);
        TurnAbortedEvent {
            turn_id: ctx.turn_id.clone(),
            reason,
        }
    };
    let end = match outcome {
        Some(Ok(last_agent_message)) => EventMsg::TaskComplete(TaskCompleteEvent {
            turn_id: ctx.turn_id.clone(),
            last_agent_message,
        }),
        None => EventMsg::TurnAborted(abort(TurnAbortReason::Interrupted)),
        Some(Err(TurnStop::Aborted)) => EventMsg::TurnAborted(abort(TurnAbortReason::Aborted)),
        Some(Err(TurnStop::Model(err))) => {
            close_dangling_calls(&ctx.session);
            EventMsg::Error(ErrorEvent {
                message: err.to_string(),
            })
        }
    };
    ctx.session.events.send_turn_end(&ctx.sub_id, end).await;
}

async fn turn_loop(ctx: &TurnContext) -> Result<Option<String>, TurnStop> {
    let config = &ctx.session.config;
    let tools = tools::tool_specs(config.include_plan_tool);
    let instructions = instructions::base_instructions(config);
    let mut last_agent_message = None;
    loop {
        let prompt = Prompt {
            instructions: instructions.clone(),
            input: ctx.session.history_snapshot(),
            tools: tools.clone(),
        };
        let output = sample_with_retries(ctx, &prompt).await?;
        ctx.session.record(output.iter().cloned());
        let mut calls = Vec::new();
        for item in output {
            match item {
                ResponseItem::Message { ref role, .. } if role == "assistant" => {
                    last_agent_message = item.message_text();
                }
                ResponseItem::FunctionCall {
                    name,
                    arguments,
                    call_id,
                    ..
                } => calls.push((call_id, name, arguments)),
                _ => {}
            }
        }
        if calls.is_empty() {
            return Ok(last_agent_message);
        }
        // The calls reach the disk before they run: a crash mid-command keeps them.
        ctx.session.flush_rollout().await;
        for (call_id, name, arguments) in calls {
            let output = tools::handle_call(ctx, &call_id, &name, &arguments).await?;
            ctx.session
                .record([ResponseItem::FunctionCallOutput { call_id, output }]);
            ctx.session.flush_rollout().await;
        }
    }
}

/// Streams one model response, retrying a broken stream up to the provider's limit.
async fn sample_with_retries(
    ctx: &TurnContext,
    prompt: &Prompt,
) -> Result<Vec<ResponseItem>, TurnStop> {
    let max_retries = ctx.session.client.provider().stream_max_retries();
    let mut attempt = 0;
    loop {
        match sample_once(ctx, prompt).await {
            Ok(items) => return Ok(items),
            Err(ModelError::Stream(reason)) if attempt < max_retries => {
                attempt += 1;
                let delay = backoff(attempt);
                ctx.emit(EventMsg::StreamError(StreamErrorEvent {
                    message: format!(
                        "model stream broke ({reason}); retrying {attempt}/{max_retries} in {} ms",
                        delay.as_millis()
                    ),
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

async fn sample_once(ctx: &TurnContext, prompt: &Prompt) -> Result<Vec<ResponseItem>, ModelError> {
    let on_retry = |notice: RetryNotice| {
        ctx.emit(EventMsg::StreamError(StreamErrorEvent {
            message: format!(
                "{}; retrying {}/{} in {} ms",
                notice.reason,
                notice.attempt,
                notice.max_retries,
                notice.delay.as_millis()
            ),
        }));
    };
    let mut stream = ctx.session.client.stream(prompt, &on_retry).await?;
    let mut items = Vec::new();
    let mut reasoning = String::new();
    while let Some(event) = stream.next().await {
        match event? {
            ResponseEvent::Created => {}
            ResponseEvent::OutputTextDelta(delta) => {
                ctx.emit(EventMsg::AgentMessageDelta(DeltaEvent { delta }));
            }
            ResponseEvent::ReasoningDelta(delta) => {
                reasoning.push_str(&delta);
                ctx.emit(EventMsg::AgentReasoningDelta(DeltaEvent { delta }));
            }
            ResponseEvent::OutputItemDone(item) => {
                match &item {
                    ResponseItem::Message { role, .. } if role == "assistant" => {
                        ctx.emit(EventMsg::AgentMessage(AgentMessageEvent {
                            message: item.message_text().unwrap_or_default(),
                        }));
                    }
                    ResponseItem::Reasoning { summary, .. } => {
                        let text: String = summary
                            .iter()
                            .map(|ReasoningSummary::SummaryText { text }| text.as_str())
                            .collect();
                        if !text.is_empty() {
                            reasoning.clear();
                            ctx.emit(EventMsg::AgentReasoning(AgentReasoningEvent { text }));
                        }
                    }
                    _ => {}
                }
                items.push(item);
            }
            ResponseEvent::Completed { token_usage, .. } => {
                if !reasoning.is_empty() {
                    ctx.emit(EventMsg::AgentReasoning(AgentReasoningEvent {
                        text: std::mem::take(&mut reasoning),
                    }));
                }
                let info = token_usage.map(|last| TokenUsageInfo {
                    total_token_usage: ctx.session.add_usage(&last),
                    last_token_usage: last,
                    model_context_window: ctx.session.config.model_context_window,
                });
                ctx.emit(EventMsg::TokenCount(TokenCountEvent {
                    info,
                    rate_limits: None,
                }));
                return Ok(items);
            }
        }
    }
    Err(ModelError::Stream(
        "stream ended before the response completed".into(),
    ))
}

/// Gives every function call without an output an "aborted" output, so the
/// history stays a valid request for the next turn.
fn close_dangling_calls(session: &Session) {
    let history = lock(&session.history);
    let answered: HashSet<String> = history
        .iter()
        .filter_map(|item| match item {
            ResponseItem::FunctionCallOutput { call_id, .. } => Some(call_id.clone()),
            _ => None,
        })
        .collect();
    let dangling: Vec<String> = history
        .iter()
        .filter_map(|item| match item {
            ResponseItem::FunctionCall { call_id, .. } if !answered.contains(call_id) => {
                Some(call_id.clone())
            }
            _ => None,
        })
        .collect();
    drop(history);
    session.record(
        dangling
            .into_iter()
            .map(|call_id| ResponseItem::FunctionCallOutput {
                call_id,
                output: "aborted: the turn was stopped before this call finished".into(),
            }),
    );
}
