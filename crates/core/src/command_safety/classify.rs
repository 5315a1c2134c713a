//! What a command is for, as shown to the user next to an approval request.
//!
//! This is a description, not a safety verdict: a `Read` entry says nothing about whether the
//! command may run unasked.

use std::path::Path;

use deputy_protocol::ParsedCommand;

use super::escape_command_for_display;
use super::safe_commands::is_print_range;
use super::script::{Connector, SimpleCommand};

/// Programs that, after a `|`, only reshape the previous command's output.
const FORMATTING_TAILS: &[&str] = &["head", "tail", "wc", "sort", "uniq"];

/// `head`/`tail` options whose value is the next argument.
const HEAD_TAIL_VALUES: &[&str] = &[
    "-n",
    "-c",
    "--lines",
    "--bytes",
    "-s",
    "--sleep-interval",
    "--pid",
];

/// `ls`/`tree` options whose value is the next argument.
const LISTING_VALUES: &[&str] = &[
    "-I",
    "-w",
    "-T",
    "--ignore",
    "--hide",
    "--width",
    "--tabsize",
    "-L",
    "-P",
    "--charset",
    "--filelimit",
    "--timefmt",
    "--sort",
];

/// `rg` options whose value is the next argument.
const RG_VALUES: &[&str] = &[
    "-f",
    "--file",
    "-g",
    "--glob",
    "--iglob",
    "-t",
    "--type",
    "-T",
    "--type-not",
    "-A",
    "-B",
    "-C",
    "--after-context",
    "--before-context",
    "--context",
    "-m",
    "--max-count",
    "-M",
    "--max-columns",
    "-j",
    "--threads",
    "-d",
    "--max-depth",
    "-r",
    "--replace",
    "-E",
    "--encoding",
    "--sort",
    "--sortr",
    "--type-add",
    "--ignore-file",
    "--color",
    "--colors",
    "--max-filesize",
];

/// `grep` options whose value is the next argument.
const GREP_VALUES: &[&str] = &[
    "-f",
    "--file",
    "-m",
    "--max-count",
    "-A",
    "-B",
    "-C",
    "--after-context",
    "--before-context",
    "--context",
    "-d",
    "--directories",
    "-D",
    "--devices",
    "--include",
    "--exclude",
    "--exclude-dir",
    "--label",
];

/// `git grep` options whose value is the next argument.
const GIT_GREP_VALUES: &[&str] = &["-f", "-m", "--max-count", "-A", "-B", "-C", "--max-depth"];

/// Describes each command of a parsed script, leaving out output-formatting pipeline tails.
pub(super) fn describe_script(commands: &[SimpleCommand]) -> Vec<ParsedCommand> {
    commands
        .iter()
        .filter(|command| !is_formatting_tail(command))
        .map(|command| describe(&command.argv()))
        .collect()
}

fn is_formatting_tail(command: &SimpleCommand) -> bool {
    command.connector == Connector::Pipe
        && command
            .words
            .first()
            .is_some_and(|program| FORMATTING_TAILS.contains(&program.text.as_str()))
}

/// Describes one simple command given as an argv.
pub(super) fn describe(argv: &[String]) -> ParsedCommand {
    let cmd = escape_command_for_display(argv);
    let unknown = |cmd| ParsedCommand::Unknown { cmd };
    let Some((program, args)) = argv.split_first() else {
        return unknown(cmd);
    };
    match program.as_str() {
        "cat" => read(cmd, &operands(args, &[])),
        "head" | "tail" => read(cmd, &operands(args, HEAD_TAIL_VALUES)),
        "sed" => match args {
            [quiet, script, file] if quiet == "-n" && is_print_range(script) => {
                read(cmd, &[file.as_str()])
            }
            _ => unknown(cmd),
        },
        "ls" | "tree" => list_files(cmd, &operands(args, LISTING_VALUES)),
        "find" => {
            // Starting points come before the first expression token.
            let start = args
                .first()
                .filter(|arg| !arg.starts_with(['-', '(', '!']))
                .map(String::as_str);
            list_files(cmd, start.as_slice())
        }
        "rg" if args.iter().any(|arg| arg == "--files") => {
            list_files(cmd, &operands(args, RG_VALUES))
        }
        "rg" => search(cmd, args, RG_VALUES),
        "grep" | "egrep" | "fgrep" => search(cmd, args, GREP_VALUES),
        "git" => match args.split_first() {
            Some((subcommand, rest)) if subcommand == "grep" => search(cmd, rest, GIT_GREP_VALUES),
            _ => unknown(cmd),
        },
        _ => unknown(cmd),
    }
}

fn read(cmd: String, operands: &[&str]) -> ParsedCommand {
    match operands {
        [path] => ParsedCommand::Read {
            cmd,
            name: Path::new(path).file_name().map_or_else(
                || path.to_string(),
                |name| name.to_string_lossy().into_owned(),
            ),
            path: Path::new(path).to_path_buf(),
        },
        _ => ParsedCommand::Unknown { cmd },
    }
}

fn list_files(cmd: String, operands: &[&str]) -> ParsedCommand {
    ParsedCommand::ListFiles {
        cmd,
        path: operands.first().map(|path| path.to_string()),
    }
}

/// The pattern is the `-e` value when there is one, else the first operand; the path follows.
fn search(cmd: String, args: &[String], takes_value: &[&str]) -> ParsedCommand {
    let explicit = explicit_pattern(args);
    let operands = operands(args, &[takes_value, &["-e", "--regexp"]].concat());
    let (query, path) = match explicit {
        Some(pattern) => (Some(pattern), operands.first().copied()),
        None => (operands.first().copied(), operands.get(1).copied()),
    };
    ParsedCommand::Search {
        cmd,
        query: query.map(str::to_string),
        path: path.map(str::to_string),
    }
}

fn explicit_pattern(args: &[String]) -> Option<&str> {
    args.iter()
        .enumerate()
        .find_map(|(index, arg)| match arg.as_str() {
            "-e" | "--regexp" => args.get(index + 1).map(String::as_str),
            other => other.strip_prefix("--regexp="),
        })
}

/// The arguments that are neither options nor option values.
fn operands<'a>(args: &'a [String], takes_value: &[&str]) -> Vec<&'a str> {
    let mut operands = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if arg == "--" {
            operands.extend(args.map(String::as_str));
            break;
        }
        if takes_value.contains(&arg.as_str()) {
            args.next();
        } else if !arg.starts_with('-') || arg == "-" {
            operands.push(arg.as_str());
        }
    }
    operands
}
