//! Classifying commands before they run: which are read-only enough to run unasked under the
//! `untrusted` approval policy, and how to describe any command to the user.
//!
//! Safety is an allowlist. A command is safe only when every program it runs is a known reader
//! and none of its arguments turns that reader into a writer (`find -delete`, `sort -o`).
//! Shell scripts (`bash -lc SCRIPT`) are read by a small parser that refuses anything whose
//! effect it cannot see from the text alone: expansions, redirections, grouping, background
//! jobs. Any doubt answers "not safe", which only costs the user one approval.
//!
//! Not covered: what the shell's startup files (`bash -l` reads the login profile) or the
//! repository's own git configuration do. Those are trusted like the executables on `PATH`.

mod classify;
mod safe_commands;
mod script;

use deputy_protocol::ParsedCommand;

use script::{Word, parse_script};

/// Shells whose `-c`/`-lc` form is read as a script.
const SHELLS: &[&str] = &["bash", "sh", "zsh"];

/// Whether `argv` only inspects files or the system, so `untrusted` may run it without asking.
pub fn is_known_safe_command(argv: &[String]) -> bool {
    if let Some(script) = shell_script(argv) {
        return parse_script(script).is_ok_and(|commands| {
            commands
                .iter()
                .all(|command| safe_commands::is_safe_simple_command(&command.words))
        });
    }
    let words: Vec<Word> = argv.iter().map(|arg| Word::literal(arg)).collect();
    safe_commands::is_safe_simple_command(&words)
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
