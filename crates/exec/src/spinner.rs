//! The live view's one transient line: a spinner saying what deputy is waiting for and
//! for how long, drawn on stderr when it is a terminal, out of the way of everything
//! else written there.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often the spinner moves.
pub(crate) const TICK: Duration = Duration::from_millis(100);

/// A handle on the spinner; clones share it (the live view sets what it says, the
/// approval prompt hides it while a question is asked).
#[derive(Clone, Default)]
pub(crate) struct Spinner {
    inner: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    /// Whether stderr is a terminal that can draw it.
    enabled: bool,
    /// What it says and since when, while there is something to wait for.
    activity: Option<(String, Instant)>,
    /// Questions being asked on the terminal; the spinner stays hidden meanwhile.
    questions: usize,
    bar: Option<ProgressBar>,
}

impl Spinner {
    /// A spinner drawn only when stderr is a capable terminal.
    pub(crate) fn for_stderr() -> Self {
        let dumb = std::env::var("TERM").is_ok_and(|term| term == "dumb");
        let spinner = Self::default();
        spinner.lock().enabled = std::io::stderr().is_terminal() && !dumb;
        spinner
    }

    /// Whether it is drawn at all.
    pub(crate) fn is_enabled(&self) -> bool {
        self.lock().enabled
    }

    /// Shows `label` with the time since now.
    pub(crate) fn set(&self, label: &str) {
        let mut state = self.lock();
        if state
            .activity
            .as_ref()
            .is_some_and(|(current, _)| current == label)
        {
            return;
        }
        state.activity = Some((label.to_string(), Instant::now()));
        state.redraw();
    }

    /// Nothing to wait for: no spinner.
    pub(crate) fn clear(&self) {
        let mut state = self.lock();
        state.activity = None;
        state.hide();
    }

    /// Moves the spinner on and updates its time.
    pub(crate) fn tick(&self) {
        self.lock().redraw();
    }

    /// Runs `write` with the spinner out of the way, so that lines written to stderr
    /// never mix with it.
    pub(crate) fn suspend<R>(&self, write: impl FnOnce() -> R) -> R {
        let state = self.lock();
        match &state.bar {
            Some(bar) => bar.suspend(write),
            None => write(),
        }
    }

    /// Hides the spinner until the returned guard is dropped (a question on the terminal).
    pub(crate) fn pause(&self) -> Paused {
        let mut state = self.lock();
        state.questions += 1;
        state.hide();
        Paused {
            spinner: self.clone(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl State {
    fn redraw(&mut self) {
        if !self.enabled || self.questions > 0 {
            return;
        }
        let Some((label, since)) = &self.activity else {
            return;
        };
        let columns = console::Term::stderr().size().1;
        let message = fit(
            &format!("{label} · {}s", since.elapsed().as_secs()),
            columns,
        );
        match &self.bar {
            Some(bar) => {
                bar.set_message(message);
                bar.tick();
            }
            None => {
                let style = ProgressStyle::with_template("{spinner:.cyan} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner());
                let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
                    .with_style(style)
                    .with_message(message);
                bar.tick();
                self.bar = Some(bar);
            }
        }
    }

    fn hide(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

/// `message` cut to leave the spinner's line a few columns short of the terminal's
/// width: a `^C` the terminal echoes after it then stays on the same line, which is
/// cleared whole, instead of wrapping it into two lines of which only one is cleared.
fn fit(message: &str, columns: u16) -> String {
    // The spinner and its space, and room for the echoed `^C`.
    let room = usize::from(columns).saturating_sub(2 + 4).max(1);
    if message.chars().count() <= room {
        return message.to_string();
    }
    let kept: String = message.chars().take(room.saturating_sub(1)).collect();
    format!("{kept}…")
}

/// Keeps the spinner hidden while it lives.
pub(crate) struct Paused {
    spinner: Spinner,
}

impl Drop for Paused {
    fn drop(&mut self) {
        let mut state = self.spinner.lock();
        state.questions = state.questions.saturating_sub(1);
        state.redraw();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_stays_short_of_the_terminal_width() {
        assert_eq!(fit("thinking · 3s", 80), "thinking · 3s");
        let long = "running cargo test --workspace --all-features -- --nocapture · 12s";
        let fitted = fit(long, 40);
        assert_eq!(fitted.chars().count(), 34);
        assert!(fitted.ends_with('…'), "{fitted}");
        assert_eq!(fit(long, 0), "…");
    }
}
