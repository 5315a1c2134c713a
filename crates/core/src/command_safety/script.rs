//! A deliberately small reader for the shell scripts that models hand to `bash -lc`.
//!
//! It understands only quoting, escapes and the list operators `|`, `&&`, `||`, `;` and newline.
//! Everything whose effect depends on the shell's state or on files (expansions, redirections,
//! grouping, background jobs, comments) is refused rather than modelled: a refusal only means
//! "ask the user", while a wrong model of the shell could let a write slip through as a read.

/// One word of a simple command, after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Word {
    /// The word's text with quotes and escapes removed.
    pub text: String,
    /// An unquoted `*`, `?` or `[` makes the shell replace this word with matching file names.
    pub globbed: bool,
    /// The file names it expands to could start with `-` and so be read as options.
    pub may_expand_to_option: bool,
}

impl Word {
    /// A word passed to a program verbatim, as in a plain argv.
    pub fn literal(text: &str) -> Self {
        Self {
            text: text.to_string(),
            globbed: false,
            may_expand_to_option: false,
        }
    }
}

/// How a simple command is joined to the one before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Connector {
    /// The script's first command.
    First,
    /// `|`: reads the previous command's output.
    Pipe,
    /// `&&`
    And,
    /// `||`
    Or,
    /// `;` or a newline.
    Sequence,
}

/// One simple command of a script and the operator that precedes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SimpleCommand {
    /// The operator joining it to the previous command.
    pub connector: Connector,
    /// Its words; never empty.
    pub words: Vec<Word>,
}

impl SimpleCommand {
    /// The words' texts, as the program would receive them absent globbing.
    pub fn argv(&self) -> Vec<String> {
        self.words.iter().map(|word| word.text.clone()).collect()
    }
}

/// Why a script is outside the subset this reader accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unsupported {
    /// A quote is never closed, or the script ends in a lone backslash.
    Unterminated,
    /// `$`, backticks: parameter, command or arithmetic expansion.
    Expansion,
    /// `<`, `>` and everything built on them (here-docs, process substitution, `&>`).
    Redirection,
    /// `(`, `)`, `{`, `}`: subshells, groups, brace expansion.
    Grouping,
    /// A lone `&`, `|&`, `;;`, `;&`.
    Operator,
    /// A `#` comment, which other shells may not treat as one.
    Comment,
    /// An operator with no command on one side, or a script with no command at all.
    MissingCommand,
}

enum Token {
    Word(Word),
    Operator(Operator),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Operator {
    Pipe,
    And,
    Or,
    Semicolon,
    Newline,
}

/// Builds one word, remembering how globbing could change it.
#[derive(Default)]
struct WordBuilder {
    text: String,
    globbed: bool,
    leading_glob: bool,
}

impl WordBuilder {
    fn push(&mut self, ch: char) {
        self.text.push(ch);
    }

    fn push_glob(&mut self, ch: char) {
        self.leading_glob |= self.text.is_empty();
        self.globbed = true;
        self.text.push(ch);
    }

    fn finish(self) -> Word {
        let may_expand_to_option =
            self.globbed && (self.leading_glob || self.text.starts_with('-'));
        Word {
            text: self.text,
            globbed: self.globbed,
            may_expand_to_option,
        }
    }
}

/// Splits `script` into simple commands, or says why it cannot be read without running a shell.
pub(super) fn parse_script(script: &str) -> Result<Vec<SimpleCommand>, Unsupported> {
    group_commands(tokenize(script)?)
}

fn tokenize(script: &str) -> Result<Vec<Token>, Unsupported> {
    let mut tokens = Vec::new();
    // `Some` once a word has started, even if empty (`''` is a word).
    let mut word: Option<WordBuilder> = None;
    let mut chars = script.chars().peekable();

    while let Some(ch) = chars.next() {
        match ch {
            ' ' | '\t' => end_word(&mut word, &mut tokens),
            '\n' => {
                end_word(&mut word, &mut tokens);
                tokens.push(Token::Operator(Operator::Newline));
            }
            '\'' => {
                let builder = word.get_or_insert_default();
                loop {
                    match chars.next() {
                        None => return Err(Unsupported::Unterminated),
                        Some('\'') => break,
                        Some(quoted) => builder.push(quoted),
                    }
                }
            }
            '"' => {
                let builder = word.get_or_insert_default();
                loop {
                    match chars.next() {
                        None => return Err(Unsupported::Unterminated),
                        Some('"') => break,
                        Some('$' | '`') => return Err(Unsupported::Expansion),
                        // Inside double quotes a backslash only escapes these; elsewhere it stays.
                        Some('\\') => match chars.next() {
                            None => return Err(Unsupported::Unterminated),
                            Some('\n') => {}
                            Some(escaped @ ('$' | '`' | '"' | '\\')) => builder.push(escaped),
                            Some(other) => {
                                builder.push('\\');
                                builder.push(other);
                            }
                        },
                        Some(quoted) => builder.push(quoted),
                    }
                }
            }
            '\\' => match chars.next() {
                None => return Err(Unsupported::Unterminated),
                // A line continuation vanishes without starting a word.
                Some('\n') => {}
                Some(escaped) => word.get_or_insert_default().push(escaped),
            },
            '$' | '`' => return Err(Unsupported::Expansion),
            '<' | '>' => return Err(Unsupported::Redirection),
            '(' | ')' | '{' | '}' => return Err(Unsupported::Grouping),
            '#' if word.is_none() => return Err(Unsupported::Comment),
            '|' => {
                end_word(&mut word, &mut tokens);
                let operator = match chars.peek() {
                    Some('|') => {
                        chars.next();
                        Operator::Or
                    }
                    Some('&') => return Err(Unsupported::Operator),
                    _ => Operator::Pipe,
                };
                tokens.push(Token::Operator(operator));
            }
            '&' => {
                end_word(&mut word, &mut tokens);
                if chars.next_if_eq(&'&').is_none() {
                    return Err(Unsupported::Operator);
                }
                tokens.push(Token::Operator(Operator::And));
            }
            ';' => {
                end_word(&mut word, &mut tokens);
                if matches!(chars.peek(), Some(';' | '&')) {
                    return Err(Unsupported::Operator);
                }
                tokens.push(Token::Operator(Operator::Semicolon));
            }
            '*' | '?' | '[' => word.get_or_insert_default().push_glob(ch),
            other => word.get_or_insert_default().push(other),
        }
    }
    end_word(&mut word, &mut tokens);
    Ok(tokens)
}

fn end_word(word: &mut Option<WordBuilder>, tokens: &mut Vec<Token>) {
    if let Some(builder) = word.take() {
        tokens.push(Token::Word(builder.finish()));
    }
}

fn group_commands(tokens: Vec<Token>) -> Result<Vec<SimpleCommand>, Unsupported> {
    let mut commands = Vec::new();
    let mut words = Vec::new();
    let mut connector = Connector::First;

    for token in tokens {
        match token {
            Token::Word(word) => words.push(word),
            Token::Operator(operator) => {
                if words.is_empty() {
                    // Blank lines, and a line break after `|`, `&&` or `||`, are fine in every
                    // shell; any other operator without a command before it is a syntax error.
                    if operator == Operator::Newline {
                        continue;
                    }
                    return Err(Unsupported::MissingCommand);
                }
                commands.push(SimpleCommand {
                    connector,
                    words: std::mem::take(&mut words),
                });
                connector = match operator {
                    Operator::Pipe => Connector::Pipe,
                    Operator::And => Connector::And,
                    Operator::Or => Connector::Or,
                    Operator::Semicolon | Operator::Newline => Connector::Sequence,
                };
            }
        }
    }

    if !words.is_empty() {
        commands.push(SimpleCommand { connector, words });
    } else if matches!(connector, Connector::Pipe | Connector::And | Connector::Or) {
        return Err(Unsupported::MissingCommand);
    }
    if commands.is_empty() {
        return Err(Unsupported::MissingCommand);
    }
    Ok(commands)
}

#[cfg(test)]
#[path = "script_tests.rs"]
mod tests;
