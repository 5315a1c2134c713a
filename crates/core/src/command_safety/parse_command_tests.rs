use std::path::PathBuf;

use deputy_protocol::ParsedCommand;

use super::*;

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|word| word.to_string()).collect()
}

fn bash(script: &str) -> Vec<String> {
    argv(&["bash", "-lc", script])
}

fn unknown(cmd: &str) -> ParsedCommand {
    ParsedCommand::Unknown {
        cmd: cmd.to_string(),
    }
}

fn read(cmd: &str, name: &str, path: &str) -> ParsedCommand {
    ParsedCommand::Read {
        cmd: cmd.to_string(),
        name: name.to_string(),
        path: PathBuf::from(path),
    }
}

fn list(cmd: &str, path: Option<&str>) -> ParsedCommand {
    ParsedCommand::ListFiles {
        cmd: cmd.to_string(),
        path: path.map(str::to_string),
    }
}

fn search(cmd: &str, query: Option<&str>, path: Option<&str>) -> ParsedCommand {
    ParsedCommand::Search {
        cmd: cmd.to_string(),
        query: query.map(str::to_string),
        path: path.map(str::to_string),
    }
}

#[test]
fn parse_command_describes_an_unknown_script_by_its_text() {
    assert_eq!(
        parse_command(&bash("touch created_by_shell_tool.txt")),
        vec![unknown("touch created_by_shell_tool.txt")]
    );
}

#[test]
fn parse_command_describes_reads_with_the_file_name_and_path() {
    assert_eq!(
        parse_command(&bash("cat src/main.rs")),
        vec![read("cat src/main.rs", "main.rs", "src/main.rs")]
    );
    assert_eq!(
        parse_command(&bash("head -n 5 foo")),
        vec![read("head -n 5 foo", "foo", "foo")]
    );
    assert_eq!(
        parse_command(&bash("sed -n 1,20p docs/a.md")),
        vec![read("sed -n '1,20p' docs/a.md", "a.md", "docs/a.md")]
    );
    assert_eq!(
        parse_command(&argv(&["cat", "file with spaces.txt"])),
        vec![read(
            "cat 'file with spaces.txt'",
            "file with spaces.txt",
            "file with spaces.txt"
        )]
    );
}

#[test]
fn parse_command_describes_listings_with_their_directory() {
    assert_eq!(parse_command(&bash("ls")), vec![list("ls", None)]);
    assert_eq!(
        parse_command(&bash("ls -la src")),
        vec![list("ls -la src", Some("src"))]
    );
    assert_eq!(
        parse_command(&bash("find . -name x")),
        vec![list("find . -name x", Some("."))]
    );
    assert_eq!(
        parse_command(&bash("rg --files")),
        vec![list("rg --files", None)]
    );
    assert_eq!(
        parse_command(&bash("tree -L 2")),
        vec![list("tree -L 2", None)]
    );
}

#[test]
fn parse_command_describes_searches_with_pattern_and_path() {
    assert_eq!(
        parse_command(&bash("rg pat src")),
        vec![search("rg pat src", Some("pat"), Some("src"))]
    );
    assert_eq!(
        parse_command(&bash("grep -rn 'a b' .")),
        vec![search("grep -rn 'a b' .", Some("a b"), Some("."))]
    );
    assert_eq!(
        parse_command(&bash("git grep pat")),
        vec![search("git grep pat", Some("pat"), None)]
    );
    assert_eq!(
        parse_command(&bash("rg -g '*.rs' -e pat")),
        vec![search("rg -g '*.rs' -e pat", Some("pat"), None)]
    );
}

#[test]
fn parse_command_folds_formatting_tails_of_pipelines() {
    assert_eq!(
        parse_command(&bash("rg pat src | head -n 20 | sort | uniq | wc -l")),
        vec![search("rg pat src", Some("pat"), Some("src"))]
    );
    assert_eq!(
        parse_command(&bash("cat a | tail -n 3")),
        vec![read("cat a", "a", "a")]
    );
}

#[test]
fn parse_command_keeps_one_entry_per_command_of_a_chain() {
    assert_eq!(
        parse_command(&bash("head -n 5 a && tail -n 5 b")),
        vec![read("head -n 5 a", "a", "a"), read("tail -n 5 b", "b", "b")]
    );
    assert_eq!(
        parse_command(&bash("cd src; ls | xargs rm")),
        vec![unknown("cd src"), list("ls", None), unknown("xargs rm")]
    );
}

#[test]
fn parse_command_describes_unparseable_scripts_as_one_unknown() {
    assert_eq!(
        parse_command(&bash("ls > out.txt")),
        vec![unknown("ls > out.txt")]
    );
    assert_eq!(
        parse_command(&bash("echo $(id)")),
        vec![unknown("echo $(id)")]
    );
    assert_eq!(parse_command(&bash("")), vec![unknown("")]);
}

#[test]
fn parse_command_describes_a_plain_argv_as_one_command() {
    assert_eq!(
        parse_command(&argv(&["bash", "-lc", "ls", "extra"])),
        vec![unknown("bash -lc ls extra")]
    );
    assert_eq!(
        parse_command(&argv(&["ls", "|", "wc"])),
        vec![list("ls '|' wc", Some("|"))]
    );
    assert_eq!(parse_command(&[]), vec![unknown("")]);
}
