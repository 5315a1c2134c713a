use super::*;

fn texts(commands: &[SimpleCommand]) -> Vec<Vec<String>> {
    commands.iter().map(SimpleCommand::argv).collect()
}

fn connectors(commands: &[SimpleCommand]) -> Vec<Connector> {
    commands.iter().map(|command| command.connector).collect()
}

fn words(script: &str) -> Vec<Vec<String>> {
    texts(&parse_script(script).expect("script parses"))
}

fn word(script: &str) -> Word {
    let commands = parse_script(script).expect("script parses");
    commands[0].words.last().expect("a word").clone()
}

#[test]
fn quotes_and_escapes_are_removed_from_words() {
    assert_eq!(
        words(r#"cat 'a b' "c d" e\ f g"h"'i'"#),
        vec![vec!["cat", "a b", "c d", "e f", "ghi"]]
    );
    assert_eq!(
        words(r#"echo "a\"b" "a\nb" "\\""#),
        vec![vec!["echo", "a\"b", "a\\nb", "\\"]]
    );
    assert_eq!(words("echo '' \"\""), vec![vec!["echo", "", ""]]);
    assert_eq!(words("echo 'a|b;c&&d>e'"), vec![vec!["echo", "a|b;c&&d>e"]]);
}

#[test]
fn operators_split_commands_even_without_spaces() {
    let commands = parse_script("ls&&rm x").unwrap();
    assert_eq!(texts(&commands), vec![vec!["ls"], vec!["rm", "x"]]);
    assert_eq!(
        connectors(&commands),
        vec![Connector::First, Connector::And]
    );

    let commands = parse_script("cat a|sh;b||c").unwrap();
    assert_eq!(
        texts(&commands),
        vec![vec!["cat", "a"], vec!["sh"], vec!["b"], vec!["c"]]
    );
    assert_eq!(
        connectors(&commands),
        vec![
            Connector::First,
            Connector::Pipe,
            Connector::Sequence,
            Connector::Or
        ]
    );
}

#[test]
fn newlines_separate_commands_and_blank_lines_are_skipped() {
    let commands = parse_script("\nls\n\n  pwd ;\n").unwrap();
    assert_eq!(texts(&commands), vec![vec!["ls"], vec!["pwd"]]);
    assert_eq!(
        connectors(&commands),
        vec![Connector::First, Connector::Sequence]
    );
    assert_eq!(words("ls \\\n  -la"), vec![vec!["ls", "-la"]]);
    assert_eq!(words("ls |\n wc"), vec![vec!["ls"], vec!["wc"]]);
}

#[test]
fn a_hash_inside_a_word_is_literal() {
    assert_eq!(words("echo a#b ''#c"), vec![vec!["echo", "a#b", "#c"]]);
}

#[test]
fn unquoted_glob_characters_mark_words_that_may_expand() {
    let star = word("ls *");
    assert!(star.globbed && star.may_expand_to_option);
    let scoped = word("ls src/*.rs");
    assert!(scoped.globbed && !scoped.may_expand_to_option);
    let dashed = word("ls -x*");
    assert!(dashed.globbed && dashed.may_expand_to_option);
    let quoted = word("ls '*'");
    assert!(!quoted.globbed && !quoted.may_expand_to_option);
    let after_empty_quotes = word("ls ''[a-]");
    assert!(after_empty_quotes.may_expand_to_option);
    let escaped = word("ls \\*");
    assert!(!escaped.globbed);
}

#[test]
fn scripts_outside_the_subset_are_refused_with_a_reason() {
    let cases = [
        ("ls 'open", Unsupported::Unterminated),
        ("ls \"open", Unsupported::Unterminated),
        ("ls \\", Unsupported::Unterminated),
        ("echo $HOME", Unsupported::Expansion),
        ("echo \"$HOME\"", Unsupported::Expansion),
        ("echo \"`id`\"", Unsupported::Expansion),
        ("echo `id`", Unsupported::Expansion),
        ("ls>f", Unsupported::Redirection),
        ("ls 2>&1", Unsupported::Redirection),
        ("cat <<<x", Unsupported::Redirection),
        ("diff <(ls) b", Unsupported::Redirection),
        ("(ls)", Unsupported::Grouping),
        ("{ ls; }", Unsupported::Grouping),
        ("echo {a,b}", Unsupported::Grouping),
        ("ls &", Unsupported::Operator),
        ("ls &| wc", Unsupported::Operator),
        ("ls |& wc", Unsupported::Operator),
        ("ls ;; wc", Unsupported::Operator),
        ("ls # x", Unsupported::Comment),
        ("#!/bin/sh", Unsupported::Comment),
        ("", Unsupported::MissingCommand),
        ("  \n ", Unsupported::MissingCommand),
        ("; ls", Unsupported::MissingCommand),
        ("ls |", Unsupported::MissingCommand),
        ("ls && && wc", Unsupported::MissingCommand),
        ("ls\n; wc", Unsupported::MissingCommand),
    ];
    for (script, reason) in cases {
        assert_eq!(parse_script(script).unwrap_err(), reason, "{script:?}");
    }
}

/// A fixed-seed xorshift generator, so failures reproduce without extra dependencies.
struct Xorshift(u64);

impl Xorshift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }
}

#[test]
fn random_scripts_never_panic_and_parsed_words_survive_requoting() {
    const ALPHABET: &[char] = &[
        'a', 'b', 'l', 's', '-', ' ', ' ', '\t', '\n', '\'', '\'', '"', '"', '\\', '\\', '|', '&',
        ';', '$', '`', '(', ')', '{', '}', '<', '>', '#', '*', '?', '[', ']', '~', '=', '!', 'é',
        '\u{0}', '\r',
    ];
    let mut rng = Xorshift(0x9e37_79b9_7f4a_7c15);
    let mut parsed = 0;
    for _ in 0..2000 {
        let length = rng.below(24);
        let script: String = (0..length)
            .map(|_| ALPHABET[rng.below(ALPHABET.len())])
            .collect();
        let Ok(commands) = parse_script(&script) else {
            continue;
        };
        parsed += 1;
        for command in &commands {
            assert!(
                !command.words.is_empty(),
                "{script:?} gave an empty command"
            );
            let argv = command.argv();
            let Ok(requoted) = shlex::try_join(argv.iter().map(String::as_str)) else {
                continue;
            };
            let reparsed = parse_script(&requoted).expect("quoted words parse");
            assert_eq!(
                texts(&reparsed),
                vec![argv],
                "{script:?} requoted as {requoted:?}"
            );
        }
    }
    assert!(parsed > 50, "only {parsed} random scripts parsed");
}
