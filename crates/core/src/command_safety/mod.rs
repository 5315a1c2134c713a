//! Classifying commands before they run: which are read-only enough to run unasked under the
//! `untrusted` approval policy, and how to describe any command to the user.
//!
//! Safety is an allowlist. A command is safe only when every program it runs is a known reader
//! and none of its arguments turns that reader into a writer (`find -delete`, `sort -o`).
//! Shell scripts (`bash -lc SCRIPT`) are read by a small parser that refuses anything whose
//! effect it cannot see from the text alone: expansions, redirections, grouping, background
//! jobs. Any doubt answers "not safe", which only costs the user one approval.
//!
//! git's reading subcommands are safe only where the sandbox keeps them read-only
//! ([`KnownSafe::WhenConfinedReadOnly`]): the repository's configuration can make them run
//! programs (`core.fsmonitor`, `diff.external`). Not covered: what the shell's startup files
//! (`bash -l` reads the login profile) do; they are trusted like the executables on `PATH`.

mod classify;
mod safe_commands;
mod script;

use deputy_protocol::ParsedCommand;

use script::{Word, parse_script};

/// Shells whose `-c`/`-lc` form is read as a script.
const SHELLS: &[&str] = &["bash", "sh", "zsh"];

/// How far a command is known to only read, which decides whether `untrusted` runs it unasked.
///
/// Ordered from least to most safe, so that a script is as safe as its least safe command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum KnownSafe {
    /// Not known to only read.
    No,
    /// Reads only while the sandbox keeps it read-only: what it runs depends on the
    /// repository's configuration (git's fsmonitor, external diff, pager, filters), which
    /// whoever wrote the repository, the model included, controls.
    WhenConfinedReadOnly,
    /// Reads only, whatever the files around it say.
    Always,
}

/// How far `argv` is known to only inspect files or the system.
pub fn known_safety(argv: &[String]) -> KnownSafe {
    if let Some(script) = shell_script(argv) {
        return parse_script(script).map_or(KnownSafe::No, |commands| {
            commands
                .iter()
                .map(|command| safe_commands::simple_command_safety(&command.words))
                .min()
                .unwrap_or(KnownSafe::Always)
        });
    }
    let words: Vec<Word> = argv.iter().map(|arg| Word::literal(arg)).collect();
    safe_commands::simple_command_safety(&words)
}

/// Describes `argv` for display: one entry per command of a script, pipeline formatting
/// tails (`| head`, `| wc`) left out, and one `Unknown` for what cannot be parsed.
pub fn parse_command(argv: &[String]) -> Vec<ParsedCommand> {
    let Some(script) = shell_script(argv) else {
        return vec![classify::describe(argv)];
    };
    match parse_script(script) {
        Ok(commands) => classify::describe_script(&commands),
        Err(_) => vec![ParsedCommand::Unknown {
            cmd: script.to_string(),
        }],
    }
}

/// The script of a shell wrapper `[bash|sh|zsh, -c|-lc, SCRIPT]`, or `None` for any other
/// argv. The shell may be named bare or as `/bin/…` or `/usr/bin/…`.
pub fn shell_script(argv: &[String]) -> Option<&str> {
    let [shell, flag, script] = argv else {
        return None;
    };
    let name = shell
        .strip_prefix("/usr/bin/")
        .or_else(|| shell.strip_prefix("/bin/"))
        .unwrap_or(shell);
    let is_wrapper = SHELLS.contains(&name) && (flag == "-c" || flag == "-lc");
    is_wrapper.then_some(script.as_str())
}

/// `argv` as one shell-quoted line (`bash -lc 'touch a.txt'`), control and bidirectional
/// characters shown escaped (see [`crate::display::quote_argv`]).
pub fn escape_command_for_display(argv: &[String]) -> String {
    crate::display::quote_argv(argv)
}

/// The command line as Codex shows it: a shell wrapper's script, else the quoted argv.
pub fn command_line(argv: &[String]) -> String {
    shell_script(argv).map_or_else(|| escape_command_for_display(argv), str::to_string)
}

#[cfg(test)]
mod parse_command_tests;
#[cfg(test)]
mod safety_tests;
