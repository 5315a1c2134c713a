//! The `apply_patch` tool: plan, decide (apply, ask, refuse), apply all-or-nothing, report.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use deputy_apply_patch::{PlannedChange, apply_planned, parse_patch, plan_patch};
use deputy_protocol::{
    ApplyPatchApprovalRequestEvent, ApprovalResolvedEvent, FileChange, FileChangeItem,
    PatchApplyStatus, PatchApprovalRequest, ReviewDecision, ThreadEventMsg, ThreadItem,
    TurnDiffEvent, WarningEvent,
};

use crate::safety::{PatchAssessment, assess_patch};
use crate::sandboxing;
use crate::thread::lock;
use crate::turn::{TurnContext, TurnStop, new_item_id};

/// Applies a patch under the session's policies and returns the model's text.
pub(super) async fn apply(
    ctx: &TurnContext,
    call_id: &str,
    patch_text: &str,
    cwd: PathBuf,
) -> Result<String, TurnStop> {
    // Planning reads and diffs whole files: keep it off the async workers.
    let text = patch_text.to_string();
    let planned = tokio::task::spawn_blocking(move || {
        parse_patch(&text)
            .map_err(|e| e.to_string())
            .and_then(|patch| plan_patch(&patch, &cwd).map_err(|e| e.to_string()))
    })
    .await
    .unwrap_or_else(|e| Err(format!("planning the patch failed: {e}")));
    let mut item = FileChangeItem {
        id: new_item_id(),
        call_id: call_id.to_string(),
        changes: BTreeMap::new(),
        status: PatchApplyStatus::InProgress,
        started: false,
        auto_approved: false,
        stdout: String::new(),
        stderr: String::new(),
    };
    let planned = match planned {
        Ok(planned) => Arc::new(planned),
        Err(message) => {
            // A patch that does not verify is still reported, so that front doors can show it.
            item.status = PatchApplyStatus::Failed;
            item.stderr = message.clone();
            ctx.item_started(ThreadItem::FileChange(item.clone()));
            ctx.item_completed(ThreadItem::FileChange(item));
            return Ok(format!("apply_patch verification failed: {message}"));
        }
    };
    let touched = touched_paths(&planned);
    item.changes = file_changes(&planned);
    ctx.item_started(ThreadItem::FileChange(item.clone()));
    let config = &ctx.config;
    let roots = sandboxing::writable_roots(config);
    let writable = config.sandbox_mode == deputy_protocol::SandboxMode::DangerFullAccess
        || touched.iter().all(|p| roots.allows(p));
    let approvals = &ctx.session.approvals;
    let declined = |mut item: FileChangeItem, told: &str| {
        item.status = PatchApplyStatus::Declined;
        item.stderr = told.to_string();
        ctx.item_completed(ThreadItem::FileChange(item));
    };
    item.auto_approved = match assess_patch(
        config.approval_policy,
        config.sandbox_mode,
        writable,
        approvals.files_approved_for_session(touched.iter()),
    ) {
        PatchAssessment::Reject(reason) => {
            declined(item, &reason);
            return Ok(reason);
        }
        PatchAssessment::Apply => true,
        PatchAssessment::Ask => {
            let pending = approvals.register(call_id);
            ctx.emit(ThreadEventMsg::PatchApprovalRequest(PatchApprovalRequest {
                item_id: item.id.clone(),
                request: ApplyPatchApprovalRequestEvent {
                    call_id: call_id.to_string(),
                    turn_id: ctx.turn_id.clone(),
                    changes: item.changes.clone(),
                    reason: (!writable).then(|| {
                        "the patch writes outside the sandbox's writable roots".to_string()
                    }),
                    grant_root: None,
                },
            }));
            let answer = pending.wait(&ctx.cancel).await;
            ctx.emit(ThreadEventMsg::ApprovalResolved(ApprovalResolvedEvent {
                item_id: item.id.clone(),
                call_id: call_id.to_string(),
                decision: answer.decision,
            }));
            match answer.decision {
                ReviewDecision::Approved => {}
                ReviewDecision::ApprovedForSession => {
                    approvals.approve_files_for_session(touched.iter().cloned());
                }
                ReviewDecision::Abort => return Err(TurnStop::Aborted),
                ReviewDecision::Denied | ReviewDecision::TimedOut => {
                    let told = match answer.reason {
                        Some(reason) => {
                            ctx.emit(ThreadEventMsg::Warning(WarningEvent {
                                message: format!("patch not approved: {reason}"),
                            }));
                            format!("The patch was not applied: approval was denied ({reason}).")
                        }
                        None => "The user declined this patch; nothing was changed. Do not retry it unchanged.".to_string(),
                    };
                    declined(item, &told);
                    return Ok(told);
                }
            }
            false
        }
    };

    item.started = true;
    ctx.item_updated(ThreadItem::FileChange(item.clone()));
    lock(&ctx.diff).remember_baseline(&planned);
    let to_apply = planned.clone();
    let result = tokio::task::spawn_blocking(move || {
        apply_planned(&to_apply)
            .map(|summary| summary.to_string())
            .map_err(|e| e.to_string())
    })
    .await
    .unwrap_or_else(|e| Err(format!("applying the patch failed: {e}")));
    match result {
        Ok(summary) => {
            item.status = PatchApplyStatus::Completed;
            item.stdout = summary.clone();
            ctx.item_completed(ThreadItem::FileChange(item));
            let unified_diff = lock(&ctx.diff).diff(&config.cwd);
            ctx.emit(ThreadEventMsg::TurnDiff(TurnDiffEvent { unified_diff }));
            Ok(summary)
        }
        Err(err) => {
            item.status = PatchApplyStatus::Failed;
            item.stderr = err.clone();
            ctx.item_completed(ThreadItem::FileChange(item));
            Ok(format!("apply_patch failed; nothing was changed: {err}"))
        }
    }
}

fn touched_paths(planned: &[PlannedChange]) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for change in planned {
        paths.push(change.path().to_path_buf());
        if let PlannedChange::Update {
            move_path: Some(dest),
            ..
        } = change
        {
            paths.push(dest.clone());
        }
    }
    paths
}

/// The wire form of a plan: path → change (the last change wins for a path changed twice).
pub(crate) fn file_changes(planned: &[PlannedChange]) -> BTreeMap<PathBuf, FileChange> {
    planned
        .iter()
        .map(|change| {
            let wire = match change {
                PlannedChange::Add { content, .. } => FileChange::Add {
                    content: content.clone(),
                },
                PlannedChange::Delete { content, .. } => FileChange::Delete {
                    content: content.clone(),
                },
                PlannedChange::Update {
                    unified_diff,
                    move_path,
                    ..
                } => FileChange::Update {
                    unified_diff: unified_diff.clone(),
                    move_path: move_path.clone(),
                },
            };
            (change.path().to_path_buf(), wire)
        })
        .collect()
}
