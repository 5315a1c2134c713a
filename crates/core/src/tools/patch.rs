//! The `apply_patch` tool: plan, assess (apply, ask, refuse), ask, apply all-or-nothing,
//! report.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use deputy_apply_patch::{
    PlannedChange, WriteTarget, WriteTargets, apply_journaled, parse_patch, plan_patch,
};
use deputy_protocol::{
    ApplyPatchApprovalRequestEvent, ApprovalDecision, FileChange, FileChangeItem, PatchApplyStatus,
    Question, SandboxMode, ThreadEventMsg, ThreadItem, TurnDiffEvent,
};
use tokio::sync::watch;

use crate::context::{PatchInFlight, TurnContext, TurnStop, new_item_id};
use crate::patch_journal;
use crate::safety::{PatchAssessment, WritableRoots, assess_patch};
use crate::sandboxing;
use crate::sync::lock;

/// Applies a patch under the session's policies and returns the model's text: plan it,
/// fix where it writes, assess it, ask when the policy says so, write it, report.
pub(super) async fn apply(
    ctx: &TurnContext,
    call_id: &str,
    patch_text: &str,
    cwd: PathBuf,
) -> Result<String, TurnStop> {
    let planned = match plan(patch_text, cwd).await {
        Ok(planned) => Arc::new(planned),
        Err(message) => return Ok(unverified(ctx, call_id, message)),
    };
    let mut item = PatchItem::started(ctx, call_id, &planned);
    let writes = match Writes::fix(ctx, &planned) {
        Ok(writes) => writes,
        Err(message) => return Ok(item.failed(ctx, message)),
    };
    match assess(ctx, &writes) {
        PatchAssessment::Reject(reason) => return Ok(item.declined(ctx, reason)),
        PatchAssessment::Apply => item.0.auto_approved = true,
        PatchAssessment::Ask => {
            if let Some(refusal) = ask(ctx, &item, &writes).await? {
                return Ok(item.declined(ctx, refusal));
            }
        }
    }
    Ok(write(ctx, item.0, planned, writes.targets).await)
}

/// Parses and plans the patch against the files as they are (reading and diffing them:
/// off the async workers). `Err` says why it does not apply.
async fn plan(patch_text: &str, cwd: PathBuf) -> Result<Vec<PlannedChange>, String> {
    let text = patch_text.to_string();
    tokio::task::spawn_blocking(move || {
        let patch = parse_patch(&text).map_err(|e| e.to_string())?;
        plan_patch(&patch, &cwd).map_err(|e| e.to_string())
    })
    .await
    .unwrap_or_else(|e| Err(format!("planning the patch failed: {e}")))
}

/// Reports a patch that does not verify (so that front doors can show it) and returns
/// the model's text.
fn unverified(ctx: &TurnContext, call_id: &str, message: String) -> String {
    let mut item = PatchItem::fresh(call_id, BTreeMap::new());
    item.status = PatchApplyStatus::Failed;
    item.stderr = message.clone();
    ctx.item_started(ThreadItem::FileChange(Box::new(item.clone())));
    ctx.item_completed(ThreadItem::FileChange(Box::new(item)));
    format!("apply_patch verification failed: {message}")
}

/// The patch's file change item, started once the patch is planned.
struct PatchItem(FileChangeItem);

impl PatchItem {
    fn fresh(call_id: &str, changes: BTreeMap<PathBuf, FileChange>) -> FileChangeItem {
        FileChangeItem {
            id: new_item_id(),
            call_id: call_id.to_string(),
            changes,
            status: PatchApplyStatus::InProgress,
            started: false,
            auto_approved: false,
            stdout: String::new(),
            stderr: String::new(),
        }
    }

    fn started(ctx: &TurnContext, call_id: &str, planned: &[PlannedChange]) -> Self {
        let item = Self::fresh(call_id, file_changes(planned));
        ctx.item_started(ThreadItem::FileChange(Box::new(item.clone())));
        Self(item)
    }

    /// Completes the item as not applied and returns `told`, what the model is told.
    fn declined(self, ctx: &TurnContext, told: String) -> String {
        self.complete(ctx, PatchApplyStatus::Declined, told.clone());
        told
    }

    /// Completes the item as failed before anything was written, and returns the model's text.
    fn failed(self, ctx: &TurnContext, message: String) -> String {
        self.complete(ctx, PatchApplyStatus::Failed, message.clone());
        format!("apply_patch verification failed: {message}")
    }

    fn complete(self, ctx: &TurnContext, status: PatchApplyStatus, stderr: String) {
        let mut item = self.0;
        item.status = status;
        item.stderr = stderr;
        ctx.item_completed(ThreadItem::FileChange(Box::new(item)));
    }
}

/// Where a planned patch writes, fixed at check time.
struct Writes {
    targets: WriteTargets,
    /// The files written, as resolved now: what a session approval covers.
    files: Vec<PathBuf>,
    /// Whether the session may write them all without asking (inside its writable
    /// roots, or no sandbox).
    writable: bool,
}

impl Writes {
    fn fix(ctx: &TurnContext, planned: &[PlannedChange]) -> Result<Self, String> {
        let touched = touched_paths(planned);
        let roots = sandboxing::writable_roots(&ctx.config);
        let (targets, inside_roots) = write_targets(&roots, &touched)?;
        let writable = ctx.config.sandbox_mode == SandboxMode::DangerFullAccess || inside_roots;
        let files = written_files(&targets, &touched);
        Ok(Self {
            targets,
            files,
            writable,
        })
    }
}

/// What the policies say of writing these files.
fn assess(ctx: &TurnContext, writes: &Writes) -> PatchAssessment {
    let config = &ctx.config;
    assess_patch(
        config.approval_policy,
        config.sandbox_mode,
        writes.writable,
        ctx.session
            .approvals
            .files_approved_for_session(writes.files.iter()),
    )
}

/// Asks the user. `Ok(None)` = approved; `Ok(Some(text))` = refused, `text` for the model.
async fn ask(
    ctx: &TurnContext,
    item: &PatchItem,
    writes: &Writes,
) -> Result<Option<String>, TurnStop> {
    let question = Question::Patch(ApplyPatchApprovalRequestEvent {
        call_id: item.0.call_id.clone(),
        turn_id: ctx.turn_id.clone(),
        changes: item.0.changes.clone(),
        reason: (!writes.writable)
            .then(|| "the patch writes outside the sandbox's writable roots".to_string()),
        grant_root: None,
    });
    let (decision, reason) = ctx.ask(&item.0.id, question).await.into_decision();
    match decision {
        ApprovalDecision::Approved => Ok(None),
        ApprovalDecision::ApprovedForSession => {
            ctx.session
                .approvals
                .approve_files_for_session(writes.files.iter().cloned());
            Ok(None)
        }
        ApprovalDecision::Abort => {
            // Not applied, by the user's choice: declined before the turn ends.
            PatchItem(item.0.clone()).declined(
                ctx,
                "aborted: the user stopped the turn instead of applying this patch".into(),
            );
            Err(TurnStop::Aborted)
        }
        ApprovalDecision::Denied | ApprovalDecision::TimedOut => Ok(Some(match reason {
            Some(reason) => format!("The patch was not applied: approval was denied ({reason})."),
            None => "The user declined this patch; nothing was changed. Do not retry it unchanged."
                .to_string(),
        })),
    }
}

/// Writes the patch all-or-nothing under its journal and returns the model's text.
/// Once started, the write runs to its end even if the turn is stopped meanwhile: the
/// turn then waits for it (bounded) and reports what it did (`finish_interrupted`).
async fn write(
    ctx: &TurnContext,
    mut item: FileChangeItem,
    planned: Arc<Vec<PlannedChange>>,
    targets: WriteTargets,
) -> String {
    item.started = true;
    ctx.item_updated(ThreadItem::FileChange(Box::new(item.clone())));
    lock(&ctx.diff).remember_baseline(&planned);
    let journal = patch_journal::journal_for(
        &ctx.config.deputy_home,
        ctx.session.log.thread_id(),
        &ctx.turn_id,
        &item.call_id,
    );
    let (done, mut written) = watch::channel(None);
    tokio::task::spawn_blocking(move || {
        let result = apply_journaled(&planned, &targets, Some(&journal))
            .map(|summary| summary.to_string())
            .map_err(|e| e.to_string());
        let _ = done.send(Some(result));
    });
    *lock(&ctx.patch_in_flight) = Some(PatchInFlight {
        item: item.clone(),
        call_id: item.call_id.clone(),
        written: written.clone(),
    });
    let result = wait_written(&mut written).await;
    lock(&ctx.patch_in_flight).take();
    report(ctx, item, result)
}

/// How long a stopped turn waits for its patch to be written.
const FINISH_GRACE: Duration = Duration::from_secs(30);

/// For a turn stopped while its patch was being written: waits (at most [`FINISH_GRACE`])
/// for the write to end, then completes the patch item and answers the call with what was
/// done, so neither the model nor the user is told "aborted" about files that changed.
pub(crate) async fn finish_interrupted(ctx: &TurnContext) {
    let Some(mut in_flight) = lock(&ctx.patch_in_flight).take() else {
        return;
    };
    let written = tokio::time::timeout(FINISH_GRACE, wait_written(&mut in_flight.written)).await;
    let output = match written {
        Ok(result) => {
            let output = report(ctx, in_flight.item, result);
            format!("{output}\n(The turn was stopped right after this patch was written.)")
        }
        Err(_) => {
            let told = format!(
                "the turn was stopped while this patch was still being written ({} s later it \
                 was not done); it is all-or-nothing: if deputy stops before it ends, the next \
                 resume of this session rolls it back and says so",
                FINISH_GRACE.as_secs()
            );
            let mut item = in_flight.item;
            item.status = PatchApplyStatus::Failed;
            item.stderr = told.clone();
            ctx.item_completed(ThreadItem::FileChange(Box::new(item)));
            told
        }
    };
    ctx.session
        .record_call_output(in_flight.call_id, output.into());
}

async fn wait_written(
    written: &mut watch::Receiver<Option<Result<String, String>>>,
) -> Result<String, String> {
    match written.wait_for(Option::is_some).await {
        Ok(result) => result
            .clone()
            .unwrap_or_else(|| Err("applying the patch failed".into())),
        Err(_) => Err("applying the patch failed: the writing thread stopped".into()),
    }
}

/// Completes the patch item with `result` and returns the model's text.
fn report(ctx: &TurnContext, mut item: FileChangeItem, result: Result<String, String>) -> String {
    match result {
        Ok(summary) => {
            item.status = PatchApplyStatus::Completed;
            item.stdout = summary.clone();
            ctx.item_completed(ThreadItem::FileChange(Box::new(item)));
            let unified_diff = lock(&ctx.diff).diff(&ctx.config.cwd);
            ctx.emit(ThreadEventMsg::TurnDiff(TurnDiffEvent { unified_diff }));
            summary
        }
        Err(err) => {
            item.status = PatchApplyStatus::Failed;
            item.stderr = err.clone();
            ctx.item_completed(ThreadItem::FileChange(Box::new(item)));
            format!("apply_patch failed; nothing was changed: {err}")
        }
    }
}

fn touched_paths(planned: &[PlannedChange]) -> Vec<PathBuf> {
    planned
        .iter()
        .flat_map(PlannedChange::paths)
        .map(Path::to_path_buf)
        .collect()
}

/// Where each touched path is written, fixed now, at check time, and whether all of them
/// lie inside the writable roots.
///
/// A path inside the roots is written beneath the root that allows it. Any other path
/// (written only if the user approves it, or under danger-full-access) is written beneath
/// its deepest existing directory as it resolves now. Either way nothing on the path can be
/// swapped for a symlink between this check and the write without the write failing.
fn write_targets(
    roots: &WritableRoots,
    touched: &[PathBuf],
) -> Result<(WriteTargets, bool), String> {
    let mut targets = WriteTargets::default();
    let mut inside_roots = true;
    for path in touched {
        let target = match roots.target(path) {
            Some(target) => target,
            None => {
                inside_roots = false;
                WriteTarget::resolve_now(path).map_err(|e| {
                    format!("{}: cannot resolve where to write it: {e}", path.display())
                })?
            }
        };
        targets.insert(path.clone(), target);
    }
    Ok((targets, inside_roots))
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

/// The files the patch writes, as resolved at check time. Session approvals are keyed by
/// these, so approving `a/x` does not also cover wherever `a/x` leads once `a` is swapped
/// for a symlink.
fn written_files(targets: &WriteTargets, touched: &[PathBuf]) -> Vec<PathBuf> {
    touched
        .iter()
        .map(|path| {
            targets
                .get(path)
                .map_or_else(|| path.clone(), WriteTarget::full_path)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::symlink;

    use deputy_apply_patch::{ApplyError, apply_planned};

    use super::*;
    use crate::approval::ApprovalGate;

    struct Scene {
        root: PathBuf,
        outside: PathBuf,
        _dirs: (tempfile::TempDir, tempfile::TempDir),
    }

    fn scene() -> Scene {
        let (root_dir, outside_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let root = root_dir.path().canonicalize().unwrap();
        let outside = outside_dir.path().canonicalize().unwrap();
        fs::create_dir(root.join("sub")).unwrap();
        fs::write(root.join("sub/a.txt"), "a\n").unwrap();
        Scene {
            root,
            outside,
            _dirs: (root_dir, outside_dir),
        }
    }

    #[test]
    fn paths_inside_a_root_are_written_beneath_that_root() {
        let scene = scene();
        let roots = WritableRoots::new(vec![scene.root.clone()], Vec::new());
        let paths = [scene.root.join("sub/a.txt"), scene.root.join("new/b.txt")];

        let (targets, inside_roots) = write_targets(&roots, &paths).unwrap();

        assert!(inside_roots);
        for (path, relative) in paths.iter().zip(["sub/a.txt", "new/b.txt"]) {
            let target = targets.get(path).unwrap();
            assert_eq!(target.root(), scene.root, "{}", path.display());
            assert_eq!(target.relative(), Path::new(relative));
        }
    }

    #[test]
    fn paths_outside_the_roots_are_written_beneath_their_directory_as_resolved_at_check_time() {
        let scene = scene();
        symlink(&scene.outside, scene.root.join("link")).unwrap();
        let roots = WritableRoots::new(vec![scene.root.join("sub")], Vec::new());
        let paths = [scene.root.join("link/x.txt"), scene.outside.join("y/z.txt")];

        let (targets, inside_roots) = write_targets(&roots, &paths).unwrap();

        assert!(!inside_roots);
        let x = targets.get(&paths[0]).unwrap();
        assert_eq!(
            (x.root(), x.relative()),
            (scene.outside.as_path(), Path::new("x.txt"))
        );
        let z = targets.get(&paths[1]).unwrap();
        assert_eq!(
            (z.root(), z.relative()),
            (scene.outside.as_path(), Path::new("y/z.txt"))
        );
    }

    #[test]
    fn a_path_through_a_dangling_symlink_is_refused_before_asking() {
        let scene = scene();
        symlink(scene.root.join("absent"), scene.root.join("dangling")).unwrap();
        let roots = WritableRoots::new(vec![scene.root.clone()], Vec::new());

        let message = write_targets(&roots, &[scene.root.join("dangling/x.txt")]).unwrap_err();

        assert!(
            message.contains("cannot resolve where to write it"),
            "{message}"
        );
    }

    #[test]
    fn a_session_approval_does_not_cover_a_path_whose_directory_was_swapped_since() {
        let scene = scene();
        fs::write(scene.outside.join("a.txt"), "a\n").unwrap();
        let no_roots = WritableRoots::default();
        let touched = [scene.root.join("sub/a.txt")];
        let written = |roots: &WritableRoots| {
            let (targets, _) = write_targets(roots, &touched).unwrap();
            written_files(&targets, &touched)
        };
        let gate = ApprovalGate::new();
        gate.approve_files_for_session(written(&no_roots));
        assert!(gate.files_approved_for_session(written(&no_roots).iter()));

        fs::rename(scene.root.join("sub"), scene.root.join("moved")).unwrap();
        symlink(&scene.outside, scene.root.join("sub")).unwrap();

        assert!(!gate.files_approved_for_session(written(&no_roots).iter()));
    }

    #[test]
    fn a_directory_swapped_for_a_symlink_after_the_check_fails_the_write() {
        let scene = scene();
        fs::write(scene.outside.join("a.txt"), "a\n").unwrap();
        let roots = WritableRoots::new(vec![scene.root.clone()], Vec::new());
        let text = "*** Begin Patch\n*** Update File: sub/a.txt\n-a\n+A\n*** End Patch";
        let planned = plan_patch(&parse_patch(text).unwrap(), &scene.root).unwrap();
        let (targets, inside_roots) = write_targets(&roots, &touched_paths(&planned)).unwrap();
        assert!(inside_roots);
        fs::rename(scene.root.join("sub"), scene.root.join("moved")).unwrap();
        symlink(&scene.outside, scene.root.join("sub")).unwrap();

        let err = apply_planned(&planned, &targets).unwrap_err();

        assert!(matches!(err, ApplyError::Redirected { .. }), "{err}");
        assert_eq!(
            fs::read_to_string(scene.outside.join("a.txt")).unwrap(),
            "a\n"
        );
        assert_eq!(
            fs::read_to_string(scene.root.join("moved/a.txt")).unwrap(),
            "a\n"
        );
    }
}
