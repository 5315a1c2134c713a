//! Recognising shell tool calls that are really `apply_patch` invocations.

use crate::heredoc::{heredoc_delimiter, strip_command_word};

/// The patch carried by a shell command, and the directory it should run in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractedPatch {
    /// The patch text (the heredoc body, or the argument as given).
    pub patch: String,
    /// `<dir>` from a leading `cd <dir> && `, as written (relative or absolute).
    pub workdir: Option<String>,
}

/// Returns the patch if `argv` is an `apply_patch` call in disguise:
/// `["apply_patch", PATCH]`, `["applypatch", PATCH]`, or a `bash`/`sh`/`zsh`
/// `-c`/`-lc` script of the form `[cd DIR && ]apply_patch <<'EOF'` … `EOF`
/// (any delimiter word, quoted or not). Anything else gives `None`, including
/// scripts that do more than apply the patch.
pub fn extract_patch_from_argv(argv: &[String]) -> Option<ExtractedPatch> {
    match argv {
        [command, patch] if command == "apply_patch" || command == "applypatch" => {
            Some(ExtractedPatch {
                patch: patch.clone(),
                workdir: None,
            })
        }
        [shell, flag, script] if is_shell(shell) && (flag == "-c" || flag == "-lc") => {
            extract_from_script(script)
        }
        _ => None,
    }
}

fn is_shell(program: &str) -> bool {
    let name = program.rsplit('/').next().unwrap_or(program);
    matches!(name, "bash" | "sh" | "zsh")
}

fn extract_from_script(script: &str) -> Option<ExtractedPatch> {
    let script = script.trim_start();
    let (first_line, body) = script.split_once('\n')?;
    let (workdir, command) = match strip_cd(first_line) {
        Some((dir, rest)) => (Some(dir), rest),
        None => (None, first_line),
    };
    let word = heredoc_delimiter(strip_command_word(command.trim_end())?)?;

    let mut patch = String::new();
    let mut consumed = 0;
    for line in body.split_inclusive('\n') {
        consumed += line.len();
        let line = line.strip_suffix('\n').unwrap_or(line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line == word {
            let trailing = &body[consumed..];
            return trailing
                .trim()
                .is_empty()
                .then_some(ExtractedPatch { patch, workdir });
        }
        patch.push_str(line);
        patch.push('\n');
    }
    None
}

/// Splits `cd DIR && rest` into `(DIR, rest)`. DIR may be bare or quoted;
/// anything needing shell expansion is refused rather than guessed at.
fn strip_cd(line: &str) -> Option<(String, &str)> {
    let rest = line.strip_prefix("cd")?;
    let rest = rest.trim_start_matches([' ', '\t']);
    if rest.len() == line.len() - 2 {
        return None;
    }
    let (dir, rest) = match rest.chars().next()? {
        '\'' => {
            let close = rest[1..].find('\'')? + 1;
            (&rest[1..close], &rest[close + 1..])
        }
        '"' => {
            let close = rest[1..].find('"')? + 1;
            let dir = &rest[1..close];
            if dir.contains(['$', '`', '\\']) {
                return None;
            }
            (dir, &rest[close + 1..])
        }
        _ => {
            let end = rest.find([' ', '\t']).unwrap_or(rest.len());
            let dir = &rest[..end];
            let plain = |c: char| c.is_alphanumeric() || "/._-+,@%=:".contains(c);
            if !dir.chars().all(plain) {
                return None;
            }
            (dir, &rest[end..])
        }
    };
    let rest = rest.trim_start().strip_prefix("&&")?.trim_start();
    (!dir.is_empty()).then(|| (dir.to_owned(), rest))
}
