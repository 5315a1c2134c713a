//! The compact human view of a turn, written to stderr.

use std::io::Write;
use std::path::{Path, PathBuf};

use deputy_core::command_safety::escape_command_for_display;
use deputy_protocol::{EventMsg, FileChange};

/// Turns events into short lines of text. Streaming deltas are not shown;
/// complete messages are.
#[derive(Debug, Default)]
pub struct HumanRenderer {
    total_tokens: Option<u64>,
    /// The session's working directory; paths under it are shown relative to it.
    cwd: Option<PathBuf>,
}

impl HumanRenderer {
    /// Writes the lines for one event (nothing for events the view does not show).
    pub fn render(&mut self, msg: &EventMsg, out: &mut impl Write) {
        let _ = self.try_render(msg, out);
    }

    fn try_render(&mut self, msg: &EventMsg, out: &mut impl Write) -> std::io::Result<()> {
        match msg {
            EventMsg::SessionConfigured(c) => {
                self.cwd = Some(c.cwd.clone());
                writeln!(
                    out,
                    "deputy · model {} ({}) · sandbox {} · approvals {} · {}",
                    c.model,
                    c.model_provider_id,
                    c.sandbox_policy.mode().as_str(),
                    c.approval_policy.as_str(),
                    c.cwd.display()
                )
            }
            EventMsg::AgentMessage(m) => writeln!(out, "\n{}\n", m.message.trim_end()),
            EventMsg::AgentReasoning(r) => writeln!(out, "thinking: {}", r.text.trim_end()),
            EventMsg::ExecCommandBegin(b) => {
                writeln!(out, "$ {}", escape_command_for_display(&b.command))
            }
            EventMsg::ExecCommandEnd(e) => {
                let mark = if e.exit_code == 0 { "ok" } else { "failed" };
                writeln!(
                    out,
                    "  {mark}: exit {} in {:.1}s",
                    e.exit_code,
                    e.duration.as_secs_f64()
                )
            }
            EventMsg::PatchApplyBegin(p) => {
                for (path, change) in &p.changes {
                    let tag = match change {
                        FileChange::Add { .. } => "A",
                        FileChange::Delete { .. } => "D",
                        FileChange::Update { .. } => "M",
                    };
                    writeln!(out, "patch {tag} {}", self.shown(path).display())?;
                }
                Ok(())
            }
            EventMsg::PatchApplyEnd(p) => {
                if p.success {
                    Ok(())
                } else {
                    writeln!(out, "  patch failed: {}", p.stderr.trim_end())
                }
            }
            EventMsg::PlanUpdate(plan) => {
                writeln!(out, "plan:")?;
                for item in &plan.plan {
                    let mark = match item.status {
                        deputy_protocol::StepStatus::Completed => "[x]",
                        deputy_protocol::StepStatus::InProgress => "[>]",
                        deputy_protocol::StepStatus::Pending => "[ ]",
                    };
                    writeln!(out, "  {mark} {}", item.step)?;
                }
                Ok(())
            }
            EventMsg::TokenCount(t) => {
                if let Some(info) = &t.info {
                    self.total_tokens = Some(info.total_token_usage.total_tokens);
                }
                Ok(())
            }
            EventMsg::ContextCompacted(_) => writeln!(out, "context compacted"),
            EventMsg::StreamError(e) => writeln!(out, "retrying: {}", e.message),
            EventMsg::Warning(w) => writeln!(out, "warning: {}", w.message),
            EventMsg::Error(e) => writeln!(out, "error: {}", e.message),
            EventMsg::TurnAborted(a) => writeln!(out, "turn aborted ({:?})", a.reason),
            EventMsg::TaskComplete(_) => match self.total_tokens {
                Some(total) => writeln!(out, "tokens used: {total}"),
                None => Ok(()),
            },
            // Deltas are not shown (their complete messages are); questions are asked
            // by the approval prompt; the rest adds nothing to this view.
            EventMsg::UserMessage(_)
            | EventMsg::TaskStarted(_)
            | EventMsg::AgentMessageDelta(_)
            | EventMsg::AgentReasoningDelta(_)
            | EventMsg::ExecCommandOutputDelta(_)
            | EventMsg::ExecApprovalRequest(_)
            | EventMsg::ApplyPatchApprovalRequest(_)
            | EventMsg::TurnDiff(_)
            | EventMsg::ShutdownComplete => Ok(()),
        }
    }

    /// `path` relative to the session's cwd when it lies inside it.
    fn shown<'a>(&self, path: &'a Path) -> &'a Path {
        self.cwd
            .as_deref()
            .and_then(|cwd| path.strip_prefix(cwd).ok())
            .filter(|relative| !relative.as_os_str().is_empty())
            .unwrap_or(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use deputy_protocol::{
        ExecCommandEndEvent, TaskCompleteEvent, TokenCountEvent, TokenUsage, TokenUsageInfo,
    };

    fn render(renderer: &mut HumanRenderer, msg: EventMsg) -> String {
        let mut out = Vec::new();
        renderer.render(&msg, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn shows_command_status_and_final_token_count() {
        let mut r = HumanRenderer::default();
        let end = render(
            &mut r,
            EventMsg::ExecCommandEnd(ExecCommandEndEvent {
                call_id: "c".into(),
                turn_id: "1".into(),
                command: vec!["false".into()],
                cwd: "/".into(),
                stdout: String::new(),
                stderr: String::new(),
                aggregated_output: String::new(),
                exit_code: 1,
                duration: std::time::Duration::from_millis(1500),
                formatted_output: String::new(),
            }),
        );
        assert_eq!(end, "  failed: exit 1 in 1.5s\n");
        let usage = TokenUsage {
            total_tokens: 42,
            ..TokenUsage::default()
        };
        render(
            &mut r,
            EventMsg::TokenCount(TokenCountEvent {
                info: Some(TokenUsageInfo {
                    total_token_usage: usage,
                    last_token_usage: usage,
                    model_context_window: None,
                }),
                rate_limits: None,
            }),
        );
        let done = render(
            &mut r,
            EventMsg::TaskComplete(TaskCompleteEvent {
                turn_id: "1".into(),
                last_agent_message: None,
            }),
        );
        assert_eq!(done, "tokens used: 42\n");
    }
}
