//! The `review` tool: reviews a change in a git repository on a new thread and answers
//! with the findings — structured (`structuredContent`) and as Markdown (text content).
//! Events, progress and cancellation are the `codex` tool's.

use deputy_core::ThreadManager;
use deputy_core::config::{ConfigLayers, ConfigOverrides};
use deputy_core::driver::{DrivenReview, ReviewTurnRequest, TurnOutcome, drive_review};
use deputy_protocol::{ReviewOutputEvent, ReviewRequest, ReviewTarget};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::turn_runner::{CallContext, McpTurn};

/// Name of the tool that reviews a change.
pub(crate) const REVIEW_TOOL: &str = "review";

/// Arguments of `review`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub(crate) struct ReviewToolParam {
    /// Directory inside the git repository to review; a relative path resolves against the server's working directory.
    #[serde(default)]
    cwd: Option<String>,
    /// What to review (default "uncommitted").
    #[serde(default)]
    // Absent rather than null: the schema is the target's own.
    #[schemars(with = "ReviewTargetParam")]
    target: Option<ReviewTargetParam>,
    /// Extra instructions for the reviewer (what to focus on).
    #[serde(default)]
    prompt: Option<String>,
    /// Model to review with, instead of `review_model` or the configured model.
    #[serde(default)]
    model: Option<String>,
}

/// What a review looks at.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum ReviewTargetParam {
    /// "uncommitted": the staged, unstaged and untracked changes against HEAD.
    Uncommitted,
    /// {"base_branch": BRANCH}: the changes since the merge base with BRANCH.
    BaseBranch(String),
    /// {"commit": SHA}: the changes one commit made.
    Commit(String),
    /// {"custom": INSTRUCTIONS}: whatever the instructions ask to review (no diff is computed).
    Custom(String),
}

impl ReviewTargetParam {
    fn into_target(self) -> ReviewTarget {
        match self {
            Self::Uncommitted => ReviewTarget::UncommittedChanges,
            Self::BaseBranch(branch) => ReviewTarget::BaseBranch { branch },
            Self::Commit(sha) => ReviewTarget::Commit { sha, title: None },
            Self::Custom(instructions) => ReviewTarget::Custom { instructions },
        }
    }
}

/// Runs a `review` call: a new thread in the call's `cwd`, one review turn.
pub(crate) async fn call_review(
    manager: &ThreadManager,
    layers: &ConfigLayers,
    call: &CallContext,
    args: serde_json::Value,
) -> CallToolResult {
    let params: ReviewToolParam = match serde_json::from_value(args) {
        Ok(params) => params,
        Err(err) => return error(format!("Invalid arguments for `{REVIEW_TOOL}`: {err}")),
    };
    let mut layers = layers.clone();
    layers.overrides = ConfigOverrides {
        cwd: params.cwd.map(Into::into),
        ..ConfigOverrides::default()
    };
    let config = match layers.load() {
        Ok(config) => config,
        Err(err) => return error(format!("Failed to load configuration: {err}")),
    };
    let thread = match manager.start(config).await {
        Ok(thread) => thread,
        Err(err) => return error(format!("Failed to start session: {err}")),
    };
    let target = params.target.map_or(
        ReviewTarget::UncommittedChanges,
        ReviewTargetParam::into_target,
    );
    let request = ReviewTurnRequest {
        submission_id: call.request_id_string(),
        request: ReviewRequest {
            user_facing_hint: target.hint(),
            target,
            prompt: params.prompt,
            model: params.model,
        },
        // From the start of the log: `session_configured` and any configuration warnings.
        replay_after: Some(0),
    };
    let mut observer = McpTurn::new(call, thread.config().progress_interval);
    let driven = drive_review(&thread, request, &mut observer, &call.cancelled).await;
    review_result(thread.id(), driven)
}

/// The call's result for how the review ended.
fn review_result(
    thread_id: &str,
    driven: Result<DrivenReview, deputy_core::ThreadError>,
) -> CallToolResult {
    let driven = match driven {
        Ok(driven) => driven,
        Err(err) => return error(err.to_string()),
    };
    match (driven.turn.outcome, driven.output) {
        (TurnOutcome::Completed { .. }, Some(output)) => success(thread_id, &output),
        (TurnOutcome::Completed { .. }, None) => {
            error("the review ended without findings".to_string())
        }
        (TurnOutcome::Failed(message), _) => error(message),
        (TurnOutcome::Aborted(reason), _) => {
            let reason = serde_json::to_value(reason)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            error(format!("review aborted ({reason})"))
        }
        (TurnOutcome::ThreadStopped, _) => error("the thread stopped unexpectedly".to_string()),
    }
}

/// The findings as Markdown, and as the output object with the thread id.
fn success(thread_id: &str, output: &ReviewOutputEvent) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(output.to_markdown())]);
    let mut structured = match serde_json::to_value(output) {
        Ok(serde_json::Value::Object(object)) => object,
        _ => JsonObject::new(),
    };
    structured.insert("threadId".into(), thread_id.into());
    result.structured_content = Some(structured.into());
    // Codex omits `isError` on success; clients compare results with its shape.
    result.is_error = None;
    result
}

fn error(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_read_as_codex_spells_them() {
        let read = |value: serde_json::Value| {
            serde_json::from_value::<ReviewTargetParam>(value).map(ReviewTargetParam::into_target)
        };
        assert_eq!(
            read(serde_json::json!("uncommitted")).ok(),
            Some(ReviewTarget::UncommittedChanges)
        );
        assert_eq!(
            read(serde_json::json!({"base_branch": "main"})).ok(),
            Some(ReviewTarget::BaseBranch {
                branch: "main".into()
            })
        );
        assert_eq!(
            read(serde_json::json!({"commit": "abc"})).ok(),
            Some(ReviewTarget::Commit {
                sha: "abc".into(),
                title: None
            })
        );
        assert!(read(serde_json::json!("everything")).is_err());
        assert!(read(serde_json::json!({"commit": 3})).is_err());
    }
}
