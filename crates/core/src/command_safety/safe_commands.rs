//! The allowlist: which simple commands only read, whatever the working tree contains.

use super::KnownSafe;
use super::script::Word;

/// Programs with no option that writes files, runs other programs or changes the system.
const ALWAYS_SAFE: &[&str] = &[
    "basename", "cat", "cmp", "column", "cut", "df", "diff", "dirname", "du", "echo", "egrep",
    "false", "fgrep", "grep", "head", "id", "ls", "nl", "printenv", "pwd", "readlink", "realpath",
    "seq", "stat", "tr", "true", "uname", "wc", "which", "whoami",
];

/// `find` primaries that delete, write files or run programs.
const FIND_UNSAFE: &[&str] = &[
    "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fls", "-fprint", "-fprint0", "-fprintf",
];

/// `git` subcommands that only read the repository.
const GIT_READ_ONLY: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "rev-parse",
    "ls-files",
    "blame",
    "describe",
    "shortlog",
];

/// Options of git's reading subcommands that write a file or run a configured program.
const GIT_UNSAFE_LONG: &[&str] = &["output", "ext-diff", "textconv"];

/// The only `git branch` arguments that keep it a listing.
const GIT_BRANCH_LISTING: &[&str] = &["-a", "-r", "-v", "-vv", "--list", "--show-current", "--all"];

/// How far one simple command is known to only read, given its words as the shell would see
/// them. git reads only as long as its configuration lets it (see [`KnownSafe`]).
pub(super) fn simple_command_safety(words: &[Word]) -> KnownSafe {
    if !is_safe_simple_command(words) {
        KnownSafe::No
    } else if words.first().is_some_and(|program| program.text == "git") {
        KnownSafe::WhenConfinedReadOnly
    } else {
        KnownSafe::Always
    }
}

/// Whether one simple command only reads, its configuration aside.
fn is_safe_simple_command(words: &[Word]) -> bool {
    let Some((program, args)) = words.split_first() else {
        return false;
    };
    // Only a bare, literal name: a path (`./ls`, `/tmp/ls`) could be any program.
    if program.globbed || program.text.contains('/') {
        return false;
    }
    let name = program.text.as_str();
    if ALWAYS_SAFE.contains(&name) {
        return true;
    }
    // Past this point options decide safety, so an argument the shell might expand into an
    // arbitrary option (`*` matching a file named `-delete`) defeats every check below.
    if args.iter().any(|arg| arg.may_expand_to_option) {
        return false;
    }
    let texts: Vec<&str> = args.iter().map(|arg| arg.text.as_str()).collect();
    match name {
        "env" => texts.is_empty(),
        "find" => !texts.iter().any(|arg| FIND_UNSAFE.contains(arg)),
        "tail" => !texts.iter().any(|arg| {
            has_short_flag(arg, 'f') || has_short_flag(arg, 'F') || is_long_option(arg, "follow")
        }),
        "sort" => !texts.iter().any(|arg| {
            has_short_flag(arg, 'o')
                || is_long_option(arg, "output")
                || is_long_option(arg, "compress-program")
        }),
        "file" => !texts
            .iter()
            .any(|arg| has_short_flag(arg, 'C') || is_long_option(arg, "compile")),
        // `-o` writes the listing to a file; `-R` writes an HTML page into every directory.
        "tree" => !texts
            .iter()
            .any(|arg| has_short_flag(arg, 'o') || has_short_flag(arg, 'R')),
        "rg" => !texts.iter().any(|arg| {
            ["pre", "pre-glob", "hostname-bin"]
                .iter()
                .any(|option| is_long_option(arg, option))
        }),
        "date" => is_safe_date(&texts),
        "uniq" => is_safe_uniq(args),
        "sed" => is_safe_sed(args),
        "git" => is_safe_git(&texts),
        _ => false,
    }
}

/// Whether `arg` could be taken for `--{name}`, including the unique abbreviations that GNU
/// `getopt_long` and git accept (`--out=f` means `--output=f`).
fn is_long_option(arg: &str, name: &str) -> bool {
    let Some(given) = arg.strip_prefix("--") else {
        return false;
    };
    let given = given.split_once('=').map_or(given, |(option, _)| option);
    !given.is_empty() && name.starts_with(given)
}

/// Whether `arg` is a cluster of short options (`-nf`) containing `flag`.
///
/// Letters that are really an option's attached value are counted too: refusing `sort -to`
/// (separator `o`) is the price of not modelling every program's option table.
fn has_short_flag(arg: &str, flag: char) -> bool {
    arg.strip_prefix('-')
        .is_some_and(|cluster| !cluster.starts_with('-') && cluster.contains(flag))
}

/// `date` both prints and sets the clock (`-s`, or a bare `MMDDhhmm` operand), so only
/// printing forms are allowed.
fn is_safe_date(args: &[&str]) -> bool {
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let allowed = match *arg {
            format if format.starts_with('+') => true,
            "-u" | "--utc" | "--universal" | "-R" | "--rfc-email" | "-I" | "--iso-8601" => true,
            // These take the next argument as their value, whatever it looks like.
            "-d" | "--date" | "-r" | "--reference" => args.next().is_some(),
            option
                if ["--date=", "--reference=", "--iso-8601=", "--rfc-3339="]
                    .iter()
                    .any(|prefix| option.starts_with(prefix)) =>
            {
                true
            }
            // `-I` takes an attached precision (`-Iseconds`), never another option.
            option => option
                .strip_prefix("-I")
                .is_some_and(|spec| spec.chars().all(|c| c.is_ascii_alphabetic())),
        };
        if !allowed {
            return false;
        }
    }
    true
}

/// `uniq IN OUT` writes OUT, so at most one operand is allowed, and no option may follow it
/// (under `POSIXLY_CORRECT` a later `-x` would be an operand).
fn is_safe_uniq(args: &[Word]) -> bool {
    let mut seen_operand = false;
    for arg in args {
        if arg.globbed || arg.text == "--" {
            return false;
        }
        let is_option = arg.text.starts_with('-') && arg.text != "-";
        if seen_operand {
            return false;
        }
        seen_operand = !is_option;
    }
    true
}

/// Only `sed -n <N>p [FILE]` and `sed -n <N>,<M>p [FILE]`: any other script can write files
/// (`w`), run commands (`e`) or edit in place (`-i`).
fn is_safe_sed(args: &[Word]) -> bool {
    let file_is_plain = |file: &Word| !file.globbed && !file.text.starts_with('-');
    match args {
        [quiet, script] => quiet.text == "-n" && is_print_range(&script.text),
        [quiet, script, file] => {
            quiet.text == "-n" && is_print_range(&script.text) && file_is_plain(file)
        }
        _ => false,
    }
}

/// Whether a sed script is exactly `N p` or `N,M p` with decimal line numbers.
pub(super) fn is_print_range(script: &str) -> bool {
    let Some(range) = script.strip_suffix('p') else {
        return false;
    };
    let is_number = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    match range.split_once(',') {
        Some((start, end)) => is_number(start) && is_number(end),
        None => is_number(range),
    }
}

/// Reading subcommands only. Options before the subcommand (`-c`, `-C`, `--git-dir`,
/// `--exec-path`, `-p`) can point git at any configuration or program, so they are refused.
fn is_safe_git(args: &[&str]) -> bool {
    let Some((subcommand, rest)) = args.split_first() else {
        return false;
    };
    let writes_or_runs = rest.iter().any(|arg| {
        GIT_UNSAFE_LONG
            .iter()
            .any(|option| is_long_option(arg, option))
    });
    if writes_or_runs {
        return false;
    }
    match *subcommand {
        sub if GIT_READ_ONLY.contains(&sub) => true,
        // `-O`/`--open-files-in-pager` runs a program of the caller's choosing.
        "grep" => !rest
            .iter()
            .any(|arg| has_short_flag(arg, 'O') || is_long_option(arg, "open-files-in-pager")),
        "branch" => rest.iter().all(|arg| GIT_BRANCH_LISTING.contains(arg)),
        "remote" => matches!(rest, [] | ["-v"] | ["--verbose"]),
        _ => false,
    }
}
