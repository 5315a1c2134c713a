//! One turn: model request → stream → run the tool calls → send outputs back,
//! until the model answers without calling a tool.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use deputy_protocol::{
    AgentMessageItem, CodexErrorInfo, CommandExecutionStatus, ContextCompactionStatus, InputItem,
    ItemDeltaEvent, ItemEvent, PatchApplyStatus, PlanUpdateItem, ReasoningItem, ReasoningSummary,
    ResponseItem, StreamErrorEvent, TaskStartedEvent, ThreadEventMsg, ThreadItem, TokenCountEvent,
    TokenUsage, TokenUsageInfo, TurnAbortReason, TurnOverrides, UpdatePlanArgs, UserMessageItem,
    WarningEvent,
};
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::client::{ModelClient, ModelError, Prompt, ResponseEvent, RetryNotice};
use crate::compact::{self, CompactTrigger};
use crate::config::Config;
use crate::context_window;
use crate::instructions;
use crate::model_family::ModelFamily;
use crate::thread::{Session, lock};
use crate::tools::{self, PatchInFlight, ToolCall, ToolRegistry, TurnDiffTracker};
use crate::turn_clock::TurnClock;
use crate::user_input;

/// How a turn ended early.
#[derive(Debug)]
pub(crate) enum TurnStop {
    /// The user answered an approval with `abort`.
    Aborted,
    /// The model call failed for good.
    Model(ModelError),
    /// The history could not be compacted (or still does not fit after compacting).
    Compaction(String),
    /// The user's input cannot be sent (an image that cannot be read).
    Input(String),
    /// The rollout could not be written (the message names the file and the cause).
    Rollout(String),
}

/// What a turn does.
pub(crate) enum TurnKind {
    /// Answer the user's input (the usual turn).
    Input {
        items: Vec<InputItem>,
        overrides: Option<TurnOverrides>,
        output_schema: Option<serde_json::Value>,
    },
    /// Compact the history, and nothing else (`Op::Compact`).
    Compact,
}

/// A turn as the submission loop starts it.
pub(crate) struct TurnStart {
    pub(crate) submission_id: String,
    pub(crate) turn_id: String,
    pub(crate) kind: TurnKind,
}

/// What one turn's tool handlers need.
pub(crate) struct TurnContext {
    pub(crate) session: Arc<Session>,
    /// The settings this turn runs with (its overrides applied).
    pub(crate) config: Arc<Config>,
    pub(crate) client: ModelClient,
    pub(crate) sub_id: String,
    pub(crate) turn_id: String,
    pub(crate) cancel: CancellationToken,
    pub(crate) diff: Mutex<TurnDiffTracker>,
    /// The JSON Schema the turn's final message must follow, if the turn was given one.
    pub(crate) output_schema: Option<serde_json::Value>,
    /// Command and file change items started but not completed, by id: closed if the turn stops.
    open_items: Mutex<BTreeMap<String, ThreadItem>>,
    /// The turn's plan item, once the model made a plan.
    plan: Mutex<Option<PlanUpdateItem>>,
    /// The patch being written, if any: a stopped turn waits for it.
    pub(crate) patch_in_flight: Mutex<Option<PatchInFlight>>,
}

/// A new item id (a UUIDv7: unique across threads and restarts).
pub(crate) fn new_item_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

impl TurnContext {
    /// Publishes an event of this turn.
    pub(crate) fn emit(&self, msg: ThreadEventMsg) {
        self.session
            .log
            .publish(Some(&self.turn_id), &self.sub_id, msg);
    }

    /// Reports a new item.
    pub(crate) fn item_started(&self, item: ThreadItem) {
        self.track(&item, false);
        self.emit(ThreadEventMsg::ItemStarted(ItemEvent { item }));
    }

    /// Reports an item's new state.
    pub(crate) fn item_updated(&self, item: ThreadItem) {
        self.track(&item, false);
        self.emit(ThreadEventMsg::ItemUpdated(ItemEvent { item }));
    }

    /// Reports an item's final state.
    pub(crate) fn item_completed(&self, item: ThreadItem) {
        self.track(&item, true);
        self.emit(ThreadEventMsg::ItemCompleted(ItemEvent { item }));
    }

    fn track(&self, item: &ThreadItem, done: bool) {
        if matches!(
            item,
            ThreadItem::CommandExecution(_)
                | ThreadItem::FileChange(_)
                | ThreadItem::ContextCompaction(_)
                | ThreadItem::McpToolCall(_)
        ) {
            let mut open = lock(&self.open_items);
            if done {
                open.remove(item.id());
            } else {
                open.insert(item.id().to_string(), item.clone());
            }
        }
    }

    /// Records the model's new plan: the turn's plan item starts with the first, later ones update it.
    pub(crate) fn update_plan(&self, args: UpdatePlanArgs) {
        let mut plan = lock(&self.plan);
        let started = plan.is_some();
        let item = PlanUpdateItem {
            id: plan
                .as_ref()
                .map_or_else(new_item_id, |item| item.id.clone()),
            explanation: args.explanation,
            plan: args.plan,
        };
        *plan = Some(item.clone());
        drop(plan);
        if started {
            self.emit(ThreadEventMsg::ItemUpdated(ItemEvent {
                item: ThreadItem::Plan(item),
            }));
        } else {
            self.emit(ThreadEventMsg::ItemStarted(ItemEvent {
                item: ThreadItem::Plan(item),
            }));
        }
    }

    /// Completes what the turn leaves open: the plan, and commands, patches or a
    /// compaction that a stop or a failure cut short.
    fn close_items(&self) {
        if let Some(plan) = lock(&self.plan).take() {
            self.emit(ThreadEventMsg::ItemCompleted(ItemEvent {
                item: ThreadItem::Plan(plan),
            }));
        }
        let open = std::mem::take(&mut *lock(&self.open_items));
        for (_, item) in open {
            let item = match item {
                ThreadItem::CommandExecution(mut cmd) => {
                    cmd.status = CommandExecutionStatus::Failed;
                    cmd.exit_code = cmd.started.then_some(-1);
                    cmd.formatted_output = "aborted: the turn was stopped".into();
                    ThreadItem::CommandExecution(cmd)
                }
                ThreadItem::FileChange(mut patch) => {
                    patch.status = PatchApplyStatus::Failed;
                    patch.stderr = "aborted: the turn was stopped".into();
                    ThreadItem::FileChange(patch)
                }
                ThreadItem::ContextCompaction(mut compaction) => {
                    compaction.status = ContextCompactionStatus::Failed;
                    ThreadItem::ContextCompaction(compaction)
                }
                ThreadItem::McpToolCall(mut call) => {
                    call.status = deputy_protocol::McpToolCallStatus::Failed;
                    call.error = Some("aborted: the turn was stopped".into());
                    ThreadItem::McpToolCall(call)
                }
                other => other,
            };
            self.emit(ThreadEventMsg::ItemCompleted(ItemEvent { item }));
        }
    }
}

/// Runs a turn to its end, emitting exactly one turn-ending event.
pub(crate) async fn run_turn(session: Arc<Session>, start: TurnStart, cancel: CancellationToken) {
    let TurnStart {
        submission_id,
        turn_id,
        kind,
    } = start;
    let (overrides, output_schema) = match &kind {
        TurnKind::Input {
            overrides,
            output_schema,
            ..
        } => (overrides.as_ref(), output_schema.clone()),
        TurnKind::Compact => (None, None),
    };
    if let Some(why) = session.mcp.failure() {
        let failed = TurnClock::never_started().failed(why, CodexErrorInfo::Other);
        session
            .log
            .publish_durable(Some(&turn_id), &submission_id, failed)
            .await;
        return;
    }
    let before = session.settings_for_turn(None).map(|s| s.config);
    let settings = match session.settings_for_turn(overrides) {
        Ok(settings) => settings,
        Err(why) => {
            let failed = TurnClock::never_started().failed(
                format!("the turn's settings cannot apply: {why}"),
                CodexErrorInfo::BadRequest,
            );
            session
                .log
                .publish_durable(Some(&turn_id), &submission_id, failed)
                .await;
            return;
        }
    };
    let ctx = TurnContext {
        turn_id,
        sub_id: submission_id,
        session,
        config: settings.config,
        client: settings.client,
        cancel: cancel.clone(),
        diff: Mutex::default(),
        output_schema,
        open_items: Mutex::default(),
        plan: Mutex::default(),
        patch_in_flight: Mutex::default(),
    };
    // A failed rollout write ended an earlier turn: continue from what the file holds.
    let recovered = ctx.session.recover_rollout().await;
    ctx.session.record_turn_context(&ctx.turn_id, &ctx.config);
    // Overrides that change what the model was told about its environment (cwd,
    // sandbox, approvals) are told to it, so it does not act on stale facts.
    let now = instructions::environment_context(&ctx.config);
    if before.is_ok_and(|before| instructions::environment_context(&before) != now) {
        ctx.session.record([ResponseItem::developer_text(now)]);
    }
    let (clock, started_at) = TurnClock::start();
    ctx.emit(ThreadEventMsg::TurnStarted(TaskStartedEvent {
        turn_id: ctx.turn_id.clone(),
        started_at: Some(started_at),
        model_context_window: ctx.config.context_window(),
    }));
    match recovered {
        Ok(None) => {}
        Ok(Some(lost)) => ctx.emit(ThreadEventMsg::Warning(WarningEvent { message: lost })),
        Err(message) => {
            let failed = clock.failed(message, CodexErrorInfo::Other);
            ctx.session
                .log
                .publish_durable(Some(&ctx.turn_id), &ctx.sub_id, failed)
                .await;
            return;
        }
    }
    let work = async {
        match kind {
            TurnKind::Input { items, .. } => {
                let (message, text) = user_input::user_message(items, &ctx.config.cwd)
                    .await
                    .map_err(|err| TurnStop::Input(err.to_string()))?;
                let user = ThreadItem::UserMessage(UserMessageItem {
                    id: new_item_id(),
                    text,
                });
                ctx.item_started(user.clone());
                ctx.item_completed(user);
                ctx.session.record([message]);
                turn_loop(&ctx).await
            }
            TurnKind::Compact => compact::compact(&ctx, CompactTrigger::Manual)
                .await
                .map(|()| None),
        }
    };
    let outcome = tokio::select! {
        outcome = work => Some(outcome),
        () = cancel.cancelled() => None,
    };
    ctx.session.approvals.clear_pending();
    // A patch being written when the turn stopped is finished and reported, not abandoned.
    tools::finish_interrupted_patch(&ctx).await;
    ctx.close_items();
    let abort = |reason| {
        close_dangling_calls(&ctx.session);
        clock.aborted(&ctx.turn_id, reason)
    };
    let end = match outcome {
        Some(Ok(last_agent_message)) => clock.completed(&ctx.turn_id, last_agent_message),
        None => abort(TurnAbortReason::Interrupted),
        Some(Err(TurnStop::Aborted)) => abort(TurnAbortReason::Aborted),
        Some(Err(TurnStop::Model(err))) => {
            close_dangling_calls(&ctx.session);
            let message = if err.is_connect() {
                format!(
                    "{err}\nIs the model server running? deputy uses {}",
                    ctx.config.base_url_origin()
                )
            } else {
                err.to_string()
            };
            clock.failed(message, err.codex_error_info())
        }
        Some(Err(
            TurnStop::Compaction(message) | TurnStop::Input(message) | TurnStop::Rollout(message),
        )) => {
            close_dangling_calls(&ctx.session);
            clock.failed(message, CodexErrorInfo::Other)
        }
    };
    ctx.session
        .log
        .publish_durable(Some(&ctx.turn_id), &ctx.sub_id, end)
        .await;
}

async fn turn_loop(ctx: &TurnContext) -> Result<Option<String>, TurnStop> {
    let config = &ctx.config;
    let family = ModelFamily::for_config(config);
    let tools = ToolRegistry::for_turn(&family, &ctx.session.tools);
    let tool_specs = tools.specs();
    let instructions = family.base_instructions.into_owned();
    let compact_limit = config.auto_compact_token_limit();
    let mut last_agent_message = None;
    // At most one compaction between two model responses: a history that does not
    // fit even compacted ends the turn instead of compacting forever.
    let mut just_compacted = false;
    loop {
        let prompt = Prompt {
            instructions: instructions.clone(),
            input: ctx.session.history_snapshot(),
            tools: tool_specs.clone(),
            parallel_tool_calls: family.parallel_tool_calls,
            output_schema: ctx.output_schema.clone(),
            reasoning_effort: config.model_reasoning_effort.clone(),
        };
        if let Some(limit) = compact_limit
            && !just_compacted
        {
            let mark = *lock(&ctx.session.usage_mark);
            let tokens = context_window::context_tokens(&prompt, mark);
            if tokens >= limit {
                compact::compact(ctx, CompactTrigger::AutoLimit { tokens, limit }).await?;
                just_compacted = true;
                continue;
            }
        }
        let sampled = match sample_with_retries(ctx, &prompt, Visibility::Shown).await {
            Ok(sampled) => sampled,
            Err(TurnStop::Model(err)) if err.is_context_window_exceeded() => {
                if just_compacted {
                    return Err(TurnStop::Compaction(format!(
                        "{err} (even after compacting the conversation)"
                    )));
                }
                compact::compact(ctx, CompactTrigger::ContextWindowExceeded).await?;
                just_compacted = true;
                continue;
            }
            Err(stop) => return Err(stop),
        };
        just_compacted = false;
        let output = sampled.items;
        ctx.session.record(output.iter().cloned());
        ctx.session.mark_usage(sampled.usage.as_ref());
        let mut calls = Vec::new();
        for item in &output {
            match item {
                ResponseItem::Message { role, .. } if role == "assistant" => {
                    last_agent_message = item.message_text();
                }
                _ => calls.extend(ToolCall::from_item(item)),
            }
        }
        if calls.is_empty() {
            return Ok(last_agent_message);
        }
        // The calls reach the disk before they run: a crash mid-command keeps them.
        ctx.session
            .flush_rollout()
            .await
            .map_err(TurnStop::Rollout)?;
        for call in calls {
            let answer = tools.dispatch(ctx, call).await?;
            ctx.session.record([answer]);
            ctx.session
                .flush_rollout()
                .await
                .map_err(TurnStop::Rollout)?;
        }
    }
}

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
                ctx.emit(ThreadEventMsg::TokenCount(TokenCountEvent {
                    info,
                    rate_limits: None,
                }));
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

/// Gives every tool call without an output an "aborted" output, so the
/// history stays a valid request for the next turn.
fn close_dangling_calls(session: &Session) {
    let history = lock(&session.history);
    let answered: HashSet<&str> = history
        .iter()
        .filter_map(ResponseItem::answered_call_id)
        .collect();
    let dangling: Vec<ResponseItem> = history
        .iter()
        .filter_map(ResponseItem::tool_call)
        .filter(|(call_id, _)| !answered.contains(call_id))
        .map(|(call_id, kind)| {
            kind.output(
                call_id.to_string(),
                "aborted: the turn was stopped before this call finished".into(),
            )
        })
        .collect();
    drop(history);
    session.record(dangling);
}
