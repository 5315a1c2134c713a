use proptest::prelude::*;

use super::*;

/// The command of the spoofing attack: shown raw, the cursor moves back over `touch X #`
/// and the line is erased, so the terminal shows only `pytest -q tests/`.
const SPOOF: &str = "touch X #\u{1b}[9D\u{1b}[K pytest -q tests/";

#[test]
fn the_spoofing_command_shows_its_escapes() {
    assert_eq!(escape_line(SPOOF), "touch X #\\e[9D\\e[K pytest -q tests/");
    assert_eq!(
        quote_argv(&["bash", "-lc", SPOOF]),
        "bash -lc $'touch X #\\e[9D\\e[K pytest -q tests/'"
    );
}

#[test]
fn controls_bidi_and_separators_are_escaped_and_the_rest_kept() {
    assert_eq!(
        escape_line("a\u{7}b\u{8}c\u{c}d\u{b}e\r\u{0}\u{7f}\u{9b}31m"),
        "a\\ab\\bc\\fd\\ve\\r\\x00\\x7F\\u009B31m"
    );
    assert_eq!(
        escape_line("x\u{202e}gpj.exe\u{2066}\u{2069}\u{200e}\u{200f}\u{61c}\u{2028}\u{2029}"),
        "x\\u202Egpj.exe\\u2066\\u2069\\u200E\\u200F\\u061C\\u2028\\u2029"
    );
    // Letters, CJK, emoji with joiners: nothing to hide there.
    let plain = "café 日本 👩\u{200d}💻 a'b \"c\" \\n";
    assert!(matches!(escape_line(plain), Cow::Borrowed(_)));
    assert!(matches!(escape_text(plain), Cow::Borrowed(_)));
}

#[test]
fn text_keeps_its_lines_and_tabs_but_not_carriage_returns() {
    assert_eq!(
        escape_text("Done.\n\tall good\r\u{1b}[2Knot\n"),
        "Done.\n\tall good\\r\\e[2Knot\n"
    );
    assert_eq!(escape_line("a\nb\tc"), "a\\nb\\tc");
}

#[test]
fn ordinary_argv_is_quoted_as_before() {
    assert_eq!(
        quote_argv(&["bash", "-lc", "touch created_by_shell_tool.txt"]),
        "bash -lc 'touch created_by_shell_tool.txt'"
    );
    assert_eq!(quote_argv(&["ls", "-la"]), "ls -la");
    assert_eq!(quote_argv(&["echo", "it's"]), "echo \"it's\"");
    assert_eq!(quote_argv(&["a\u{0}b", "c"]), "$'a\\x00b' c");
    assert_eq!(
        quote_argv(&["a\nb", "back\\slash'"]),
        r#"$'a\nb' "back\\slash'""#
    );
    assert_eq!(quote_argv::<&str>(&[]), "");
}

/// Characters that make quoting and escaping work: controls, quotes, backslashes, hex
/// digits after an escape, bidi characters, separators, shell syntax, other letters.
fn tricky_char() -> impl Strategy<Value = char> {
    prop_oneof![
        prop::char::range('\u{1}', '\u{7f}'),
        prop::char::range('\u{80}', '\u{a0}'),
        prop::sample::select(vec![
            '\u{61c}', '\u{200d}', '\u{200e}', '\u{200f}', '\u{2028}', '\u{2029}', '\u{202a}',
            '\u{202e}', '\u{2066}', '\u{2069}', 'é', '日', '💻', '\'', '\\', '$', '`', '"', ' ',
        ]),
        any::<char>().prop_filter("no NUL: an argv cannot hold one", |c| *c != '\0'),
    ]
}

fn tricky_word() -> impl Strategy<Value = String> {
    prop::collection::vec(tricky_char(), 0..12).prop_map(|chars| chars.into_iter().collect())
}

fn shows_nothing_hidden(shown: &str) -> bool {
    !shown.contains(always_escaped)
}

/// What bash makes of `line` as the arguments of `printf '%s\0'`.
fn bash_words(line: &str) -> Vec<String> {
    let output = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!("printf '%s\\0' {line}"))
        .env("LC_ALL", "C.UTF-8")
        .output()
        .expect("run bash");
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8(output.stdout).expect("UTF-8 from bash");
    let mut words: Vec<String> = text.split('\0').map(str::to_owned).collect();
    words.pop();
    words
}

proptest! {
    #[test]
    fn nothing_shown_can_hide_or_reorder_text(text in prop::collection::vec(tricky_char(), 0..40)) {
        let text: String = text.into_iter().collect();
        prop_assert!(shows_nothing_hidden(&escape_line(&text)));
        let kept = escape_text(&text);
        prop_assert!(kept.chars().all(|c| c == '\n' || c == '\t' || !always_escaped(c)));
        // Only escaped characters change: removing the escapes' effect leaves the rest.
        prop_assert_eq!(kept.lines().count(), text.lines().count());
    }

    #[test]
    fn a_quoted_argv_shows_nothing_hidden_and_is_exactly_what_bash_runs(
        argv in prop::collection::vec(tricky_word(), 1..4)
    ) {
        let line = quote_argv(&argv);
        prop_assert!(shows_nothing_hidden(&line), "{}", line);
        prop_assert_eq!(bash_words(&line), argv);
    }
}
