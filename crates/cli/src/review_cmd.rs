//! `deputy review`: review a change in a git repository and print the findings.
//!
//! The findings go to stdout, most urgent first, each with its `file:line`, then a one-line
//! verdict; with `--json`, the review output object instead. Progress (what the reviewer
//! reads and runs) goes to stderr when stderr is a terminal. A review that ran exits 0
//! whatever its verdict; one that could not run (not a git repository, an unknown branch
//! or commit) exits 1 with the reason on stderr; one stopped by SIGINT, SIGTERM or SIGHUP
//! stops the reviewer's commands and exits with `128 + signal` (130 for Ctrl-C).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::time::Duration;

use clap::{ArgGroup, Args};
use deputy_core::ThreadManager;
use deputy_core::command_safety::escape_command_for_display;
use deputy_core::config::{ConfigLayers, ConfigOverrides};
use deputy_core::display::{escape_line, escape_text};
use deputy_core::driver::{ReviewTurnRequest, TurnObserver, TurnOutcome, drive_review};
use deputy_core::rollout::SessionSource;
use deputy_protocol::{
    EventMsg, ExecCommandStatus, Op, ReviewFinding, ReviewOutputEvent, ReviewRequest, ReviewTarget,
    ThreadEvent, codex_events,
};
use tokio_util::sync::CancellationToken;

use crate::signals::TerminationSignals;

/// How long a review stopped by a signal gets to end (killing the reviewer's commands)
/// before its thread is shut down all the same.
const INTERRUPT_GRACE: Duration = Duration::from_secs(5);

/// Arguments of `deputy review`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("target").args(["uncommitted", "base", "commit"])))]
pub(crate) struct ReviewArgs {
    /// Review the staged, unstaged and untracked changes (the default).
    #[arg(long)]
    uncommitted: bool,
    /// Review the changes since the merge base with BRANCH.
    #[arg(long, value_name = "BRANCH")]
    base: Option<String>,
    /// Review the changes one commit made.
    #[arg(long, value_name = "SHA")]
    commit: Option<String>,
    /// Print the review output object (findings and verdict) as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Model to review with, instead of `review_model` or the configured model.
    #[arg(short = 'm', long)]
    model: Option<String>,
    /// Config profile to use.
    #[arg(short = 'p', long)]
    profile: Option<String>,
    /// Directory inside the repository to review (default: the current directory).
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Extra instructions for the reviewer (what to focus on); the target stays the one
    /// the flags choose.
    prompt: Option<String>,
}

impl ReviewArgs {
    fn target(&self) -> ReviewTarget {
        match (&self.base, &self.commit) {
            (Some(branch), _) => ReviewTarget::BaseBranch {
                branch: branch.clone(),
            },
            (None, Some(sha)) => ReviewTarget::Commit {
                sha: sha.clone(),
                title: None,
            },
            (None, None) => ReviewTarget::UncommittedChanges,
        }
    }
}

/// Runs `deputy review` and returns the exit code.
pub(crate) fn run(mut layers: ConfigLayers, args: ReviewArgs) -> anyhow::Result<i32> {
    let target = args.target();
    let request = ReviewRequest {
        user_facing_hint: target.hint(),
        target,
        prompt: args.prompt.filter(|p| !p.trim().is_empty()),
        model: args.model,
    };
    layers.overrides = ConfigOverrides {
        profile: args.profile,
        cwd: args.cwd,
        ..ConfigOverrides::default()
    };
    let config = layers.load()?;
    let json = args.json;
    crate::run_to_end(crate::runtime()?, async {
        let signals = TerminationSignals::install()?;
        let manager = ThreadManager::new(crate::launcher(), SessionSource::Exec);
        let thread = manager.start(config).await?;
        let cancel = CancellationToken::new();
        let mut progress = Progress {
            shown: std::io::stderr().is_terminal(),
            wrote: false,
        };
        let request = ReviewTurnRequest {
            submission_id: "review".to_string(),
            request,
            replay_after: None,
        };
        let (driven, signal) = {
            let mut driven = pin!(drive_review(&thread, request, &mut progress, &cancel));
            tokio::select! {
                driven = &mut driven => (Some(driven), None),
                signal = signals.received() => {
                    cancel.cancel();
                    let driven = tokio::time::timeout(INTERRUPT_GRACE, &mut driven).await.ok();
                    (driven, Some(signal))
                }
            }
        };
        if progress.wrote {
            // Sets the findings apart from the progress above them.
            let _ = writeln!(std::io::stderr());
        }
        let _ = thread.submit(Op::Shutdown);
        thread.closed().await;
        if let Some(signal) = signal {
            let _ = writeln!(
                std::io::stderr(),
                "deputy: review stopped by signal {signal}"
            );
            return Ok(128 + signal);
        }
        let Some(driven) = driven else {
            anyhow::bail!("the review did not end");
        };
        let driven = driven?;
        match (driven.turn.outcome, driven.output) {
            (TurnOutcome::Completed { .. }, Some(output)) => {
                let text = if json {
                    serde_json::to_string_pretty(&output)? + "\n"
                } else {
                    let here = std::env::current_dir().unwrap_or_default();
                    // Every word of it is the reviewer's: shown with controls escaped.
                    escape_text(&render(&output, &here)).into_owned()
                };
                let mut stdout = std::io::stdout().lock();
                stdout.write_all(text.as_bytes())?;
                stdout.flush()?;
                Ok(0)
            }
            (TurnOutcome::Completed { .. }, None) => {
                anyhow::bail!("the review ended without findings")
            }
            (TurnOutcome::Failed(message), _) => anyhow::bail!("{message}"),
            (TurnOutcome::Aborted(_), _) => Ok(130),
            (TurnOutcome::ThreadStopped, _) => anyhow::bail!("the review stopped unexpectedly"),
        }
    })
}

/// The findings as text: most urgent first, each with its `file:line` and its
/// explanation, then the verdict on one line. Paths under `here` are shown relative to it.
fn render(output: &ReviewOutputEvent, here: &Path) -> String {
    let mut findings: Vec<&ReviewFinding> = output.findings.iter().collect();
    findings.sort_by_key(|finding| finding.priority);
    let mut text = String::new();
    for finding in &findings {
        let path = &finding.code_location.absolute_file_path;
        let shown = path
            .strip_prefix(here)
            .ok()
            .filter(|relative| !relative.as_os_str().is_empty())
            .unwrap_or(path);
        text.push_str(&format!(
            "[P{}] {}:{} {}\n",
            finding.priority,
            shown.display(),
            finding.code_location.line_range,
            finding.title.trim()
        ));
        for line in finding.body.trim().lines() {
            match line.trim_end() {
                "" => text.push('\n'),
                line => text.push_str(&format!("     {line}\n")),
            }
        }
        text.push('\n');
    }
    let explanation = one_line(&output.overall_explanation);
    if output.is_nothing_to_review() {
        return format!("{explanation}\n");
    }
    if output.overall_correctness.is_empty() {
        // The reviewer's answer was not the expected object: show it as it came.
        if !explanation.is_empty() {
            text.push_str(output.overall_explanation.trim());
            text.push_str("\n\n");
        }
        text.push_str(
            "Verdict: none (the reviewer's answer above is not in the findings format)\n",
        );
        return text;
    }
    if findings.is_empty() {
        text.push_str("No findings.\n\n");
    }
    let mut verdict = format!("Verdict: {}", output.overall_correctness);
    if output.overall_confidence_score > 0.0 {
        verdict.push_str(&format!(
            " (confidence {:.2})",
            output.overall_confidence_score
        ));
    }
    if !explanation.is_empty() {
        verdict.push_str(&format!(" — {explanation}"));
    }
    text.push_str(&verdict);
    text.push('\n');
    text
}

/// `text` with its lines joined by spaces.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What the reviewer is doing, on stderr, when stderr is a terminal.
struct Progress {
    shown: bool,
    /// Whether any line was written.
    wrote: bool,
}

impl TurnObserver for Progress {
    async fn deliver(&mut self, event: &ThreadEvent) {
        if !self.shown {
            return;
        }
        let mut stderr = std::io::stderr().lock();
        for codex in codex_events(event) {
            if let Some(line) = progress_line(&codex.msg) {
                let _ = writeln!(stderr, "{}", escape_line(&line));
                self.wrote = true;
            }
        }
    }
}

/// The progress line for one event, if it deserves one. The findings themselves are
/// printed on stdout at the end, so neither the reviewer's answer nor the exit item
/// shows here; nor does the failure, which the command reports as its error.
fn progress_line(msg: &EventMsg) -> Option<String> {
    match msg {
        EventMsg::EnteredReviewMode(request) => {
            Some(format!("reviewing {}…", request.user_facing_hint))
        }
        EventMsg::AgentReasoning(reasoning) => reasoning
            .text
            .lines()
            .find(|line| !line.trim().is_empty())
            .map(|line| format!("thinking: {}", line.trim())),
        EventMsg::ExecCommandBegin(begin) => {
            Some(format!("$ {}", escape_command_for_display(&begin.command)))
        }
        EventMsg::ExecCommandEnd(end) => match end.status {
            ExecCommandStatus::Declined => Some("  declined".to_string()),
            ExecCommandStatus::Completed | ExecCommandStatus::Failed => {
                Some(format!("  exit {}", end.exit_code))
            }
        },
        EventMsg::ContextCompacted(_) => Some("compacted the conversation".to_string()),
        EventMsg::WebSearchEnd(search) => Some(format!("searched the web: {}", search.query)),
        EventMsg::StreamError(error) => Some(format!("retrying: {}", error.message)),
        EventMsg::Warning(warning) => Some(format!("warning: {}", warning.message)),
        EventMsg::TurnAborted(_) => Some("review interrupted".to_string()),
        EventMsg::SessionConfigured(_)
        | EventMsg::TaskStarted(_)
        | EventMsg::WebSearchBegin(_)
        | EventMsg::UserMessage(_)
        | EventMsg::AgentMessageDelta(_)
        | EventMsg::AgentMessage(_)
        | EventMsg::AgentReasoningDelta(_)
        | EventMsg::ExecCommandOutputDelta(_)
        | EventMsg::ExecApprovalRequest(_)
        | EventMsg::ApplyPatchApprovalRequest(_)
        | EventMsg::PatchApplyBegin(_)
        | EventMsg::PatchApplyEnd(_)
        | EventMsg::TurnDiff(_)
        | EventMsg::PlanUpdate(_)
        | EventMsg::TokenCount(_)
        | EventMsg::ExitedReviewMode(_)
        | EventMsg::Error(_)
        | EventMsg::TaskComplete(_)
        | EventMsg::ShutdownComplete
        | EventMsg::McpToolCallBegin(_)
        | EventMsg::McpToolCallEnd(_)
        | EventMsg::McpStartupUpdate(_)
        | EventMsg::McpStartupComplete(_) => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use deputy_protocol::{ReviewCodeLocation, ReviewLineRange};

    use super::*;

    fn finding(title: &str, priority: u8, path: &str, start: u32, end: u32) -> ReviewFinding {
        ReviewFinding {
            title: title.into(),
            body: format!("Why {title}.\n\nDetails."),
            confidence_score: 0.5,
            priority,
            code_location: ReviewCodeLocation {
                absolute_file_path: path.into(),
                line_range: ReviewLineRange { start, end },
            },
        }
    }

    #[test]
    fn findings_come_by_priority_with_locations_then_the_verdict() {
        let output = ReviewOutputEvent {
            findings: vec![
                finding("Name it", 2, "/w/src/a.rs", 5, 7),
                finding("Handle empty", 0, "/w/b.rs", 3, 3),
                finding("Outside", 1, "/elsewhere/c.rs", 9, 9),
            ],
            overall_correctness: "patch is incorrect".into(),
            overall_explanation: "It panics\non empty input.".into(),
            overall_confidence_score: 0.8,
        };
        assert_eq!(
            render(&output, Path::new("/w")),
            "[P0] b.rs:3 Handle empty\n     Why Handle empty.\n\n     Details.\n\n\
             [P1] /elsewhere/c.rs:9 Outside\n     Why Outside.\n\n     Details.\n\n\
             [P2] src/a.rs:5-7 Name it\n     Why Name it.\n\n     Details.\n\n\
             Verdict: patch is incorrect (confidence 0.80) — It panics on empty input.\n"
        );
    }

    #[test]
    fn no_findings_and_unreadable_answers_say_so() {
        let clean = ReviewOutputEvent {
            overall_correctness: "patch is correct".into(),
            overall_explanation: "Fine.".into(),
            ..ReviewOutputEvent::default()
        };
        assert_eq!(
            render(&clean, Path::new("/w")),
            "No findings.\n\nVerdict: patch is correct — Fine.\n"
        );
        let raw = ReviewOutputEvent {
            overall_explanation: "Looks good to me!".into(),
            ..ReviewOutputEvent::default()
        };
        let text = render(&raw, Path::new("/w"));
        assert!(
            text.starts_with("Looks good to me!\n\nVerdict: none"),
            "{text}"
        );
    }

    #[test]
    fn progress_names_the_target_and_the_commands() {
        let request = ReviewRequest {
            target: ReviewTarget::UncommittedChanges,
            prompt: None,
            model: None,
            user_facing_hint: "the uncommitted changes".into(),
        };
        assert_eq!(
            progress_line(&EventMsg::EnteredReviewMode(request)).unwrap(),
            "reviewing the uncommitted changes…"
        );
    }
}
