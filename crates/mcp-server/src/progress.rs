//! `notifications/progress` for a running call, so clients with request
//! timeouts see liveness: on every command start and end, on model usage,
//! and on a timer while the turn runs.

use std::time::Instant;

use deputy_core::command_safety::command_line;
use deputy_core::display::escape_line;
use deputy_protocol::{EventMsg, ExecCommandStatus};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use tokio_util::sync::CancellationToken;

use crate::turn_runner::unless_client_gone;

/// Sends progress for one call; a no-op when the call carried no token.
pub(crate) struct ProgressReporter {
    peer: Peer<RoleServer>,
    token: Option<ProgressToken>,
    client_gone: CancellationToken,
    step: u64,
    /// What the turn is doing now, and since when.
    current: String,
    since: Instant,
}

impl ProgressReporter {
    /// A reporter for the call's progress token, if any.
    pub(crate) fn new(
        peer: Peer<RoleServer>,
        token: Option<ProgressToken>,
        client_gone: CancellationToken,
    ) -> Self {
        Self {
            peer,
            token,
            client_gone,
            step: 0,
            current: "thinking".to_string(),
            since: Instant::now(),
        }
    }

    /// Reports the events worth a progress message.
    pub(crate) async fn on_event(&mut self, msg: &EventMsg) {
        let message = match msg {
            EventMsg::TaskStarted(_) => "turn started".to_string(),
            EventMsg::ExecCommandBegin(begin) => {
                self.set_current(format!("running `{}`", short_command(&begin.command)))
            }
            EventMsg::ExecCommandEnd(end) => {
                self.set_current("thinking".to_string());
                match end.status {
                    ExecCommandStatus::Declined => {
                        format!("`{}` declined", short_command(&end.command))
                    }
                    ExecCommandStatus::Completed | ExecCommandStatus::Failed => {
                        format!("`{}` exited {}", short_command(&end.command), end.exit_code)
                    }
                }
            }
            EventMsg::ExecApprovalRequest(request) => self.set_current(format!(
                "waiting for approval: `{}`",
                short_command(&request.command)
            )),
            EventMsg::ApplyPatchApprovalRequest(request) => self.set_current(format!(
                "waiting for approval: changes to {} file(s)",
                request.changes.len()
            )),
            EventMsg::PatchApplyBegin(begin) => {
                self.set_current("thinking".to_string());
                format!("editing {} file(s)", begin.changes.len())
            }
            EventMsg::TokenCount(count) => match &count.info {
                Some(info) => format!(
                    "model: {} tokens",
                    human_count(info.total_token_usage.total_tokens)
                ),
                None => return,
            },
            EventMsg::StreamError(e) => format!("retrying the model: {}", e.message),
            EventMsg::EnteredReviewMode(request) => {
                self.set_current(format!("reviewing {}", request.user_facing_hint))
            }
            EventMsg::ExitedReviewMode(_) => self.set_current("review finished".to_string()),
            EventMsg::ContextCompacted(_) => "compacted the conversation".to_string(),
            EventMsg::WebSearchEnd(e) => format!("searched the web: {}", e.query),
            EventMsg::McpToolCallBegin(begin) => self.set_current(format!(
                "calling `{}` of MCP server `{}`",
                begin.invocation.tool, begin.invocation.server
            )),
            EventMsg::McpToolCallEnd(end) => {
                self.set_current("thinking".to_string());
                let how = if end.result.is_ok() {
                    "returned"
                } else {
                    "failed"
                };
                format!(
                    "`{}` of MCP server `{}` {how}",
                    end.invocation.tool, end.invocation.server
                )
            }
            EventMsg::SessionConfigured(_)
            | EventMsg::WebSearchBegin(_)
            | EventMsg::UserMessage(_)
            | EventMsg::AgentMessageDelta(_)
            | EventMsg::AgentMessage(_)
            | EventMsg::AgentReasoningDelta(_)
            | EventMsg::AgentReasoning(_)
            | EventMsg::ExecCommandOutputDelta(_)
            | EventMsg::PatchApplyEnd(_)
            | EventMsg::TurnDiff(_)
            | EventMsg::PlanUpdate(_)
            | EventMsg::Warning(_)
            | EventMsg::Error(_)
            | EventMsg::TurnAborted(_)
            | EventMsg::TaskComplete(_)
            | EventMsg::ShutdownComplete
            | EventMsg::McpStartupUpdate(_)
            | EventMsg::McpStartupComplete(_) => return,
        };
        self.send(message).await;
    }

    /// Reports that the turn is still running: what it does, for how long already.
    pub(crate) async fn tick(&mut self) {
        let message = format!("{} ({}s)", self.current, self.since.elapsed().as_secs());
        self.send(message).await;
    }

    /// Records what the turn is doing from now on; returns it as the message to send.
    fn set_current(&mut self, current: String) -> String {
        self.current = current;
        self.since = Instant::now();
        self.current.clone()
    }

    async fn send(&mut self, message: String) {
        let Some(token) = &self.token else { return };
        self.step += 1;
        let mut param = ProgressNotificationParam::new(token.clone(), self.step as f64);
        // Clients show the message as it is; what the model wrote is escaped here.
        param.message = Some(escape_line(&message).into_owned());
        let send = self.peer.notify_progress(param);
        if let Some(Err(err)) = unless_client_gone(&self.client_gone, send).await {
            tracing::debug!("progress notification not sent: {err}");
        }
    }
}

/// The command on one line, cut at 60 characters: a script's later lines are shown as `\n`,
/// never dropped, so that what is shown first cannot stand for the whole.
fn short_command(argv: &[String]) -> String {
    let text = escape_line(&command_line(argv)).into_owned();
    if text.chars().count() > 60 {
        format!("{}…", text.chars().take(60).collect::<String>())
    } else {
        text
    }
}

fn human_count(n: u64) -> String {
    if n >= 1000 {
        format!("{:.1}k", n as f64 / 1000.0)
    } else {
        n.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_shown_short() {
        let argv = vec![
            "bash".to_string(),
            "-lc".to_string(),
            "cargo test\nmore".to_string(),
        ];
        assert_eq!(short_command(&argv), "cargo test\\nmore");
        assert_eq!(short_command(&["ls".into(), "-la".into()]), "ls -la");
        // Not a shell wrapper: quoted like everywhere else, so spaces stay visible.
        assert_eq!(
            short_command(&["touch".into(), "a b.txt".into()]),
            "touch 'a b.txt'"
        );
        assert_eq!(human_count(1234), "1.2k");
        assert_eq!(human_count(12), "12");
    }
}
