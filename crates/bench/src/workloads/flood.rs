//! Output flood: one command printing 100 MB, through one `codex` call.

use super::model::{ANSWER_OK, Model, marker};
use super::{EXIT_TIMEOUT, Outcome, Workload, codex_call, start};
use crate::report::{Goal, Sample};
use crate::target::{Home, Target};

/// How many bytes the command prints.
pub const FLOOD_BYTES: u64 = 100_000_000;
/// One 100-byte line of the flood, newline excluded.
const LINE: &str = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopqrstuvwxyzy";

/// The shell script printing [`FLOOD_BYTES`] bytes of [`LINE`]s.
pub fn flood_script() -> String {
    format!("yes {LINE} | head -c {FLOOD_BYTES}")
}

/// One call whose command floods its output; the server's memory must not follow it.
pub struct OutputFlood;

impl Workload for OutputFlood {
    fn run(&mut self, target: &Target) -> anyhow::Result<Outcome> {
        // The model sees a truncated view; its head must still be the command's output.
        let model = Model::one_command(|_| flood_script(), &LINE[..40])?;
        let home = Home::new(&model.server.base_url())?;
        let server = start(target, &home)?;
        let before = server.peak_rss_kib()?;
        let (sent, reply, _) = codex_call(&server, &format!("flood {}", marker(0)), ANSWER_OK)?;
        let after = server.peak_rss_kib()?;
        let (_, stdout_bytes) = server.traffic();
        let exit = server.finish(EXIT_TIMEOUT)?;
        Ok(Outcome::Measured(vec![
            Sample::ms("time to result", Goal::None, reply.at - sent),
            Sample::mib(
                "peak RSS growth",
                Goal::AtMost(12.0),
                after.saturating_sub(before),
            ),
            Sample::mib("peak RSS", Goal::None, after),
            Sample::mib("sent to client", Goal::None, stdout_bytes / 1024),
            Sample::ms("total CPU (command included)", Goal::None, exit.cpu),
        ]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flood_lines_are_one_hundred_bytes() {
        assert_eq!(LINE.len() + 1, 100);
        assert!(flood_script().ends_with("| head -c 100000000"));
    }
}
