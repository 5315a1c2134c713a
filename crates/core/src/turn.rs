//! One turn: model request → stream → run the tool calls → send outputs back,
//! until the model answers without calling a tool.

// Runs on the async runtime: no blocking std calls (see clippy.toml).
#![cfg_attr(not(test), warn(clippy::disallowed_methods))]

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use deputy_protocol::{
    CodexErrorInfo, InputItem, ResponseItem, TaskStartedEvent, ThreadEventMsg, ThreadItem,
    TurnAbortReason, TurnOverrides, UserMessageItem, WarningEvent,
};
use tokio_util::sync::CancellationToken;

use crate::client::Prompt;
use crate::compact::{self, CompactTrigger};
use crate::context::{Session, TurnContext, TurnStop, new_item_id};
use crate::context_window;
use crate::instructions;
use crate::sampling::{Visibility, sample_with_retries};
use crate::sync::lock;
use crate::tools::{self, ThreadTools, ToolCall};
use crate::turn_clock::TurnClock;
use crate::user_input;

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
    /// The handlers the thread was given at run time, offered beside the built-in tools.
    pub(crate) tools: Arc<ThreadTools>,
}

/// Runs a turn to its end, emitting exactly one turn-ending event.
pub(crate) async fn run_turn(session: Arc<Session>, start: TurnStart, cancel: CancellationToken) {
    let TurnStart {
        submission_id,
        turn_id,
        kind,
        tools,
    } = start;
    let (overrides, output_schema) = match &kind {
        TurnKind::Input {
            overrides,
            output_schema,
            ..
        } => (overrides.as_ref(), output_schema.clone()),
        TurnKind::Compact => (None, None),
    };
    let unusable = lock(&session.unusable).clone();
    if let Some(why) = unusable {
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
                turn_loop(&ctx, &tools).await
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

async fn turn_loop(
    ctx: &TurnContext,
    thread_tools: &ThreadTools,
) -> Result<Option<String>, TurnStop> {
    let config = &ctx.config;
    let (tools, base) = crate::request::for_turn(ctx, thread_tools);
    let compact_limit = config.auto_compact_token_limit();
    let mut last_agent_message = None;
    // At most one compaction between two model responses: a history that does not
    // fit even compacted ends the turn instead of compacting forever.
    let mut just_compacted = false;
    loop {
        let prompt = Prompt {
            input: ctx.session.history_snapshot(),
            output_schema: ctx.output_schema.clone(),
            ..base.clone()
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
