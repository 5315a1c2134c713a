//! Review mode: a turn in which an isolated reviewer looks at a change and reports
//! structured findings.
//!
//! The reviewer is a child thread with its own clean history and rollout (linked to the
//! parent): the review prompt as its instructions, no user, developer or project
//! instructions, `review_model` (or the session's model), a read-only sandbox and no
//! approvals. The parent's turn reports `entered_review_mode`, then the reviewer's items,
//! then `exited_review_mode` with the findings; only a short record of the result enters
//! the parent's history. The change itself comes from git run in the read-only sandbox,
//! with every program the repository's configuration names switched off ([`git_command`]).

// Runs on the async runtime: no blocking std calls (see clippy.toml).
#![cfg_attr(not(test), warn(clippy::disallowed_methods))]

mod git;
mod git_command;
mod output;

use std::sync::Arc;

use deputy_protocol::{
    AskForApproval, CodexErrorInfo, EnteredReviewModeItem, ExitedReviewModeItem, InputItem,
    ItemEvent, Op, ResponseItem, ReviewOutputEvent, ReviewRequest, SandboxMode, TaskStartedEvent,
    ThreadEvent, ThreadEventMsg, ThreadItem, TurnAbortReason,
};
use tokio_util::sync::CancellationToken;

pub use git::{MAX_DIFF_BYTES, ReviewGitError, ReviewMaterial, collect};
pub use output::parse_review_output;

use crate::client::ModelClient;
use crate::config::Config;
use crate::context::{Session, new_item_id};
use crate::driver::{TurnObserver, TurnOutcome, TurnRequest, Unasked, drive_turn};
use crate::rollout::{RolloutRecorder, SessionMeta, SessionSource};
use crate::thread::{SpawnThread, Thread, ThreadStart, TurnInput};
use crate::turn_clock::TurnClock;

/// The reviewer's instructions.
pub const REVIEW_PROMPT: &str = include_str!("review_prompt.md");

/// Runs review turn `turn_id`, emitting exactly one turn-ending event; the reviewer's
/// thread is started with `spawn`.
pub(crate) async fn run_review(
    session: Arc<Session>,
    submission_id: String,
    turn_id: String,
    request: ReviewRequest,
    cancel: CancellationToken,
    spawn: SpawnThread,
) {
    let publish = |msg| session.log.publish(Some(&turn_id), &submission_id, msg);
    let config = match session.settings_for_turn(None) {
        Ok(settings) => settings.config,
        Err(why) => {
            let failed = TurnClock::never_started().failed(why, CodexErrorInfo::BadRequest);
            session
                .log
                .publish_durable(Some(&turn_id), &submission_id, failed)
                .await;
            return;
        }
    };
    session.record_turn_context(&turn_id, &config);
    let (clock, started_at) = TurnClock::start();
    publish(ThreadEventMsg::TurnStarted(TaskStartedEvent {
        turn_id: turn_id.clone(),
        started_at: Some(started_at),
        model_context_window: config.model_context_window,
    }));
    let entered = ThreadItem::EnteredReviewMode(Box::new(EnteredReviewModeItem {
        id: new_item_id(),
        review: request.user_facing_hint.clone(),
        request: request.clone(),
    }));
    publish(ThreadEventMsg::ItemStarted(ItemEvent {
        item: entered.clone(),
    }));
    publish(ThreadEventMsg::ItemCompleted(ItemEvent { item: entered }));

    // Dropping the review on cancellation drops the reviewer's handle, which stops its
    // turn and kills its commands.
    let result = tokio::select! {
        result = review(&session, &config, &turn_id, &submission_id, &request, spawn) => Some(result),
        () = cancel.cancelled() => None,
    };
    let (output, rendered) = match &result {
        Some(Ok(output)) => (Some(output.clone()), output.to_markdown()),
        Some(Err(why)) => (None, format!("The review failed: {why}")),
        None => (None, "The review was interrupted.".to_string()),
    };
    let exited = ThreadItem::ExitedReviewMode(Box::new(ExitedReviewModeItem {
        id: new_item_id(),
        review: rendered.clone(),
        output,
    }));
    publish(ThreadEventMsg::ItemStarted(ItemEvent {
        item: exited.clone(),
    }));
    publish(ThreadEventMsg::ItemCompleted(ItemEvent { item: exited }));
    let end = match result {
        Some(Ok(_)) => {
            session.record([
                ResponseItem::user_text(format!("Review {}.", request.user_facing_hint)),
                ResponseItem::assistant_text(rendered.clone()),
            ]);
            clock.completed(&turn_id, Some(rendered))
        }
        Some(Err(why)) => clock.failed(format!("the review failed: {why}"), CodexErrorInfo::Other),
        None => clock.aborted(&turn_id, TurnAbortReason::Interrupted),
    };
    session
        .log
        .publish_durable(Some(&turn_id), &submission_id, end)
        .await;
}

/// Computes the change, runs the reviewer on it and reads its findings.
async fn review(
    session: &Session,
    config: &Arc<Config>,
    turn_id: &str,
    submission_id: &str,
    request: &ReviewRequest,
    spawn: SpawnThread,
) -> Result<ReviewOutputEvent, String> {
    let material = collect(
        &config.cwd,
        &request.target,
        config.sandbox_launcher.as_deref(),
    )
    .await
    .map_err(|e| e.to_string())?;
    // An empty change needs no reviewer: said at once, without a model call.
    let custom = matches!(request.target, deputy_protocol::ReviewTarget::Custom { .. });
    if !custom && material.diff.trim().is_empty() && material.files.trim().is_empty() {
        return Ok(ReviewOutputEvent::nothing_to_review(&material.description));
    }
    let reviewer = start_reviewer(session, config, request, spawn)?;
    let mut forward = Forward {
        session,
        turn_id,
        submission_id,
    };
    let turn = TurnRequest {
        submission_id: "review".into(),
        input: TurnInput {
            items: vec![InputItem::Text {
                text: review_input(&material, request),
            }],
            ..TurnInput::default()
        },
        replay_after: Some(0),
    };
    // Dropping this future (the review was interrupted) drops the reviewer, which stops.
    let never = CancellationToken::new();
    let driven = drive_turn(&reviewer, turn, Arc::new(Unasked), &mut forward, &never).await;
    let answer = match driven.map(|driven| driven.outcome) {
        Ok(TurnOutcome::Completed { last_agent_message }) => {
            Ok(last_agent_message.unwrap_or_default())
        }
        Ok(TurnOutcome::Failed(message)) => Err(message),
        Ok(TurnOutcome::Aborted(_)) => Err("the reviewer was stopped".to_string()),
        Ok(TurnOutcome::ThreadStopped) => Err("the reviewer stopped unexpectedly".to_string()),
        Err(err) => Err(err.to_string()),
    };
    let _ = reviewer.submit(Op::Shutdown);
    reviewer.closed().await;
    answer.map(|text| parse_review_output(&text))
}

/// Reports the reviewer's events in the parent's turn.
struct Forward<'a> {
    session: &'a Session,
    turn_id: &'a str,
    submission_id: &'a str,
}

impl TurnObserver for Forward<'_> {
    async fn deliver(&mut self, event: &ThreadEvent) {
        if is_forwarded(&event.msg) {
            self.session
                .log
                .publish(Some(self.turn_id), self.submission_id, event.msg.clone());
        }
    }
}

/// The reviewer's events the parent's turn reports: its items and their progress, not
/// its own thread and turn boundaries (which would end the parent's turn) or approvals
/// (it never asks; its questions could not be answered through the parent).
fn is_forwarded(msg: &ThreadEventMsg) -> bool {
    match msg {
        ThreadEventMsg::ItemStarted(_)
        | ThreadEventMsg::ItemUpdated(_)
        | ThreadEventMsg::ItemCompleted(_)
        | ThreadEventMsg::AgentMessageDelta(_)
        | ThreadEventMsg::ReasoningDelta(_)
        | ThreadEventMsg::CommandOutputDelta(_)
        | ThreadEventMsg::TokenCount(_)
        | ThreadEventMsg::StreamError(_)
        | ThreadEventMsg::Warning(_) => true,
        ThreadEventMsg::SessionConfigured(_)
        | ThreadEventMsg::TurnStarted(_)
        | ThreadEventMsg::QuestionAsked(_)
        | ThreadEventMsg::ApprovalResolved(_)
        | ThreadEventMsg::TurnDiff(_)
        | ThreadEventMsg::TurnComplete(_)
        | ThreadEventMsg::TurnAborted(_)
        | ThreadEventMsg::TurnFailed(_)
        | ThreadEventMsg::ShutdownComplete
        | ThreadEventMsg::McpStartupUpdate(_)
        | ThreadEventMsg::McpStartupComplete(_) => false,
    }
}

/// Starts the reviewer: a child thread with its own rollout, linked to the parent.
fn start_reviewer(
    session: &Session,
    config: &Config,
    request: &ReviewRequest,
    spawn: SpawnThread,
) -> Result<Arc<Thread>, String> {
    let mut reviewer = config.clone();
    reviewer.model = request
        .model
        .clone()
        .or_else(|| config.review_model.clone())
        .unwrap_or_else(|| config.model.clone());
    reviewer.approval_policy = AskForApproval::Never;
    reviewer.sandbox_mode = SandboxMode::ReadOnly;
    reviewer.sandbox_workspace_write.network_access = false;
    // The reviewer reads; MCP tools run outside the sandbox and may write.
    reviewer.mcp_servers.clear();
    reviewer.base_instructions = Some(REVIEW_PROMPT.to_string());
    reviewer.developer_instructions = None;
    reviewer.include_plan_tool = false;
    let client = ModelClient::new(reviewer.model_provider.clone(), reviewer.model.clone())
        .map_err(|e| format!("cannot set up the reviewer's model client: {e}"))?;
    let id = uuid::Uuid::now_v7().to_string();
    let mut meta = SessionMeta::new(&id, &reviewer, SessionSource::Review);
    meta.parent_thread_id = Some(session.log.thread_id().to_string());
    let rollout = RolloutRecorder::create(&reviewer.deputy_home, &meta, &[])
        .map_err(|e| format!("cannot create the reviewer's session file: {e}"))?;
    Ok(spawn(ThreadStart {
        id,
        config: Arc::new(reviewer),
        client,
        history: Vec::new(),
        rollout: Some(rollout),
        next_seq: 1,
    }))
}

/// The reviewer's one user message: what to review and the change itself.
fn review_input(material: &ReviewMaterial, request: &ReviewRequest) -> String {
    let mut text = format!(
        "Review {} in the repository at {}.\n",
        material.description,
        material.root.display()
    );
    if let Some(prompt) = request.prompt.as_deref().filter(|p| !p.trim().is_empty()) {
        text.push_str(&format!("\nAlso: {}\n", prompt.trim()));
    }
    if !material.files.trim().is_empty() {
        text.push_str(&format!(
            "\nChanged files:\n{}\n",
            material.files.trim_end()
        ));
    }
    if !material.diff.trim().is_empty() {
        text.push_str(&format!("\nThe diff:\n```diff\n{}```\n", material.diff));
    }
    text.push_str(
        "\nRead more of the repository with read-only commands where the diff is not enough. \
         End with the JSON object your instructions describe.",
    );
    text
}
