use super::*;

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|word| word.to_string()).collect()
}

fn bash(script: &str) -> Vec<String> {
    argv(&["bash", "-lc", script])
}

/// Whether `argv` reads only, at least where the sandbox keeps it read-only.
fn is_safe(argv: &[String]) -> bool {
    known_safety(argv) != KnownSafe::No
}

/// Scripts that write, run arbitrary programs or depend on the shell's state: never safe under
/// any shell wrapper, nor as plain argvs when the parser can split them into commands.
const NEVER_SAFE: &[&str] = &[
    "ls > f",
    "ls >> f",
    "echo hi > f",
    "ls >| f",
    "ls 2> f",
    "ls &> f",
    "cat <<EOF",
    "cat < f",
    "cat <(ls)",
    "ls >(wc)",
    "find . -delete",
    "find . -exec rm {} \\;",
    "find . -execdir rm {} +",
    "find . -ok rm {} ;",
    "find . -fprint out",
    "find . -fls out",
    "find * -name x",
    "git push",
    "git commit -m x",
    "git checkout main",
    "git reset --hard",
    "git config user.name x",
    "git fetch",
    "git stash",
    "git clean -fdx",
    "git -c core.pager=sh log",
    "git -C /tmp status",
    "git --git-dir=/tmp/x status",
    "git branch -D x",
    "git branch new-branch",
    "git remote add origin url",
    "git log --output=f",
    "git log --out=f",
    "git diff --ext-diff",
    "git show --textconv HEAD",
    "git grep -O vim pat",
    "git grep --open-files-in-pager=vim pat",
    "git diff *",
    "git",
    "cat x | sh",
    "cat x | bash",
    "ls | xargs rm",
    "xargs rm",
    "rg --pre sh x",
    "rg --pre=sh x",
    "rg --pre-glob '*' x",
    "rg --hostname-bin evil x",
    "rg pat *",
    "sed -i s/a/b/ f",
    "sed -n 1p f w out",
    "sed -n 1p -i f",
    "sed -n '1p;w out' f",
    "sed -n 1e f",
    "sed 1p f",
    "ls; rm -rf x",
    "ls && rm x",
    "ls || rm x",
    "ls&&rm x",
    "ls\nrm x",
    "ls $(rm x)",
    "ls `rm x`",
    "ls \"$(rm x)\"",
    "echo $HOME",
    "echo ${HOME}",
    "echo $'a'",
    "FOO=1 ls",
    "/tmp/ls",
    "./ls",
    "/bin/ls",
    "ls &",
    "ls & rm x",
    "ls |& wc",
    "(ls)",
    "{ ls; }",
    "ls {a,b}",
    "ls # ; rm x",
    "ls 'unterminated",
    "ls \\",
    "| wc",
    "ls |",
    "ls ;; wc",
    "sort -o f x",
    "sort --output=f x",
    "sort --out f x",
    "sort -ro f x",
    "sort --compress-program=sh x",
    "sort *",
    "tail -f x",
    "tail -F x",
    "tail --follow x",
    "tail -nf x",
    "date -s 2020-01-01",
    "date --set=2020-01-01",
    "date 0101000020",
    "file -C -m magic",
    "tree -o out",
    "tree -R -H . -o x",
    "uniq in out",
    "uniq in -x",
    "uniq *",
    "env rm x",
    "env -i rm x",
    "awk '{print}' f",
    "perl -e 1",
    "python3 -c 1",
    "node -e 1",
    "sh -c ls",
    "bash -lc ls",
    "touch created_by_shell_tool.txt",
    "rm -rf x",
    "cp a b",
    "mv a b",
    "chmod +x f",
    "curl http://x",
    "cargo check",
    "less f",
];

/// Read-only inspection commands that `untrusted` runs without asking.
const ALWAYS_SAFE: &[&str] = &[
    "ls -la",
    "ls -la | wc -l",
    "ls *.rs",
    "git status",
    "git log --oneline -5",
    "git diff HEAD~1",
    "git show HEAD --stat",
    "git log -- 'src/*.rs'",
    "git branch",
    "git branch -a -vv",
    "git branch --show-current",
    "git remote -v",
    "git rev-parse HEAD",
    "git ls-files",
    "git blame src/lib.rs",
    "git grep -n pat",
    "git log | head",
    "rg -n foo src",
    "rg --files",
    "rg -z pat",
    "rg --pretty pat",
    "grep -rn \"a b\" .",
    "grep -r pat *",
    "cat 'file with spaces.txt'",
    "cat a|wc -l",
    "sed -n 10,20p f",
    "sed -n 5p f",
    "sed -n 1,3p",
    "find . -name '*.rs'",
    "find src -type f -newer Cargo.toml",
    "head -n 5 a && tail -n 5 b",
    "tail -n 20 log.txt",
    "wc -l a b",
    "pwd",
    "echo hi; echo there",
    "echo '$HOME' \"\\$HOME\" \\$HOME",
    "echo 'a > b' \"c | d\" e\\;f",
    "true || false",
    "whoami",
    "id -u",
    "uname -a",
    "date",
    "date +%Y-%m-%d",
    "date -u -d yesterday +%s",
    "date -Iseconds",
    "which cargo",
    "file Cargo.toml",
    "stat -c %s f",
    "du -sh .",
    "df -h",
    "tree -L 2 src",
    "nl f",
    "cut -d, -f1 f",
    "tr a-z A-Z",
    "sort -u f",
    "sort -k2,2n f | uniq -c",
    "uniq -c f",
    "diff -u a b",
    "cmp a b",
    "basename a/b",
    "dirname a/b",
    "realpath .",
    "readlink -f x",
    "printenv PATH",
    "env",
    "seq 1 3",
    "column -t f",
    "egrep x f",
    "fgrep x f",
    "ls\n\nwc -l f\n",
    "ls &&\n  pwd",
    "ls ''#x",
    "ls src/*.rs",
];

#[test]
fn scripts_that_write_or_run_arbitrary_programs_are_never_safe() {
    for script in NEVER_SAFE {
        assert!(!is_safe(&bash(script)), "bash -lc {script:?} was safe");
        for shell in [["bash", "-c"], ["sh", "-c"], ["zsh", "-lc"]] {
            let wrapped = argv(&[shell[0], shell[1], script]);
            assert!(!is_safe(&wrapped), "{wrapped:?} was safe");
        }
    }
}

#[test]
fn unsafe_commands_stay_unsafe_as_plain_argv() {
    for script in NEVER_SAFE {
        // Scripts the parser refuses have no plain-argv equivalent; globs mean nothing there.
        let Ok(commands) = script::parse_script(script) else {
            continue;
        };
        if commands
            .iter()
            .flat_map(|c| &c.words)
            .any(|word| word.globbed)
        {
            continue;
        }
        // A nested `sh -c ls` is refused inside a script but is itself a wrapper as an argv.
        let argvs: Vec<Vec<String>> = commands.iter().map(|c| c.argv()).collect();
        if argvs.iter().any(|argv| shell_script(argv).is_some()) {
            continue;
        }
        let all_safe = argvs.iter().all(|argv| is_safe(argv));
        assert!(
            !all_safe,
            "the commands of {script:?} were all safe as plain argv"
        );
    }
}

#[test]
fn read_only_inspection_scripts_are_safe() {
    for script in ALWAYS_SAFE {
        assert!(is_safe(&bash(script)), "bash -lc {script:?} was not safe");
    }
}

#[test]
fn plain_argv_is_judged_without_a_shell() {
    assert!(is_safe(&argv(&["ls", "-la"])));
    assert!(is_safe(&argv(&["cat", "a; rm x"])));
    assert!(is_safe(&argv(&["git", "log", "--oneline"])));
    assert!(!is_safe(&argv(&["rm", "-rf", "x"])));
    assert!(!is_safe(&argv(&["/tmp/ls"])));
    assert!(!is_safe(&argv(&["./ls"])));
    assert!(!is_safe(&argv(&["env", "rm", "x"])));
    assert!(!is_safe(&argv(&["find", ".", "-delete"])));
    assert!(!is_safe(&[]));
}

#[test]
fn git_reads_only_where_the_sandbox_keeps_it_read_only() {
    use KnownSafe::*;
    let table: &[(&[&str], KnownSafe)] = &[
        (&["git", "status"], WhenConfinedReadOnly),
        (&["git", "log", "--oneline"], WhenConfinedReadOnly),
        (&["bash", "-lc", "git diff | head -5"], WhenConfinedReadOnly),
        (
            &["bash", "-lc", "ls && git show HEAD"],
            WhenConfinedReadOnly,
        ),
        (&["bash", "-lc", "ls && wc -l f"], Always),
        (&["ls"], Always),
        (&["bash", "-lc", "git status > f"], No),
        (&["git", "push"], No),
    ];
    for (words, expected) in table {
        assert_eq!(known_safety(&argv(words)), *expected, "{words:?}");
    }
}

#[test]
fn shell_wrappers_need_exactly_a_flag_and_a_script() {
    assert!(!is_safe(&argv(&["bash", "-lc", "ls", "extra-arg"])));
    assert!(!is_safe(&argv(&["bash", "-x", "ls"])));
    assert!(!is_safe(&argv(&["bash", "-lc"])));
    assert!(!is_safe(&argv(&["fish", "-c", "ls"])));
    assert!(is_safe(&argv(&["/bin/bash", "-lc", "ls"])));
    assert!(is_safe(&argv(&["sh", "-c", "ls | wc -l"])));
}

#[test]
fn shell_script_returns_the_script_of_known_wrappers_only() {
    assert_eq!(shell_script(&bash("ls -la")), Some("ls -la"));
    assert_eq!(shell_script(&argv(&["zsh", "-lc", "pwd"])), Some("pwd"));
    assert_eq!(
        shell_script(&argv(&["/usr/bin/sh", "-c", "pwd"])),
        Some("pwd")
    );
    assert_eq!(shell_script(&argv(&["/tmp/bash", "-c", "pwd"])), None);
    assert_eq!(shell_script(&argv(&["bash", "-c", "pwd", "x"])), None);
    assert_eq!(shell_script(&argv(&["ls", "-c", "pwd"])), None);
}

#[test]
fn escape_command_for_display_shell_quotes_each_word() {
    let wrapped = bash("touch created_by_shell_tool.txt");
    assert_eq!(
        escape_command_for_display(&wrapped),
        "bash -lc 'touch created_by_shell_tool.txt'"
    );
    assert_eq!(escape_command_for_display(&argv(&["ls", "-la"])), "ls -la");
    assert_eq!(
        escape_command_for_display(&argv(&["a\0b", "c"])),
        "$'a\\x00b' c"
    );
}

#[test]
fn appending_a_write_to_any_generated_safe_script_makes_it_unsafe() {
    const VOCABULARY: &[&str] = &[
        "ls", "cat", "-la", "wc", "-l", "git", "status", "log", "'a b'", "\"x y\"", "src/*.rs",
        "|", "&&", "||", ";", "\n", "head", "-n", "5", "f", "echo", "rg", "pat", "sed", "1p",
        "\\;", "''",
    ];
    const WRITES: &[&str] = &[
        " > f",
        " >> f",
        "; rm -rf x",
        " && rm x",
        "\nrm x",
        " | sh",
        " $(rm x)",
        " `rm x`",
        " &",
        " | xargs rm",
        " | tee f",
        " 2>f",
    ];
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |bound: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % bound as u64) as usize
    };
    let mut safe_scripts = 0;
    for _ in 0..3000 {
        let length = 1 + next(8);
        let script = (0..length)
            .map(|_| VOCABULARY[next(VOCABULARY.len())])
            .collect::<Vec<_>>()
            .join(" ");
        if !is_safe(&bash(&script)) {
            continue;
        }
        safe_scripts += 1;
        for write in WRITES {
            let extended = format!("{script}{write}");
            assert!(!is_safe(&bash(&extended)), "{extended:?} was safe");
        }
    }
    assert!(
        safe_scripts > 100,
        "only {safe_scripts} generated scripts were safe"
    );
}
