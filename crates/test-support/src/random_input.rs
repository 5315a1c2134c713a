//! Random and mutated input for the parsers' property tests (`proptest`): byte-level
//! mutations of valid samples, random JSON values, a case count CI keeps small and a person
//! can raise, and a watchdog that turns a hang into a failure.
//!
//! ```
//! use deputy_test_support::random_input::{mutated, within};
//! use proptest::test_runner::TestRunner;
//! use std::time::Duration;
//!
//! TestRunner::default()
//!     .run(&mutated(&["{\"id\":1}"]), |bytes| {
//!         // Any answer will do; a panic or a hang fails the test.
//!         let _ = within(Duration::from_secs(5), move || {
//!             serde_json::from_slice::<serde_json::Value>(&bytes).is_ok()
//!         });
//!         Ok(())
//!     })
//!     .unwrap();
//! ```

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::Value;
use tokio::io::{AsyncRead, ReadBuf};

/// The proptest configuration of a parser test: `ci_cases` cases, unless the environment
/// variable `PROPTEST_CASES` asks for another number (for a longer run by hand).
pub fn config(ci_cases: u32) -> Config {
    let mut config = Config::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = ci_cases;
    }
    config
}

/// Runs `parse` on a thread of its own and fails the test when it takes longer than `limit`:
/// a parser must answer every input, never loop on one.
pub fn within<T: Send + 'static>(limit: Duration, parse: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(parse());
    });
    match rx.recv_timeout(limit) {
        Ok(value) => value,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("the parser did not answer within {limit:?}")
        }
        // The parser panicked: its own message is already printed.
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => panic!("the parser panicked"),
    }
}

/// Byte strings that steer mutations of JSON and TOML towards the parsers' edge cases.
const SPICE: &[&[u8]] = &[
    b"\"",
    b"\\",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"=",
    b"\n",
    b"\r\n",
    b" ",
    b"\0",
    b"null",
    b"true",
    b"-",
    b"1e999",
    b"18446744073709551616",
    b"-9223372036854775809",
    b"\\u0000",
    b"\\ud800",
    b"\xff",
    b"\xc3",
    b"\xe2\x80\xae",
    b"#",
    b"'''",
    b"[[",
    b"]]",
    b"\"id\":",
    b"\"method\":",
    b"\"params\":",
    b"\"jsonrpc\":\"2.0\"",
    b"\"result\":",
    b"\"error\":",
];

/// One change to a byte string; positions are taken modulo its length.
#[derive(Debug, Clone)]
pub enum Mutation {
    /// Removes up to `len` bytes at `at`.
    Delete {
        /// Where.
        at: usize,
        /// How many.
        len: usize,
    },
    /// Inserts `bytes` at `at`.
    Insert {
        /// Where.
        at: usize,
        /// What.
        bytes: Vec<u8>,
    },
    /// Replaces the byte at `at` with `byte`.
    Replace {
        /// Where.
        at: usize,
        /// The new byte.
        byte: u8,
    },
    /// Copies up to `len` bytes at `from` to `to`.
    Duplicate {
        /// From where.
        from: usize,
        /// How many.
        len: usize,
        /// To where.
        to: usize,
    },
    /// Cuts everything after `at`.
    Truncate {
        /// Where.
        at: usize,
    },
}

/// Any [`Mutation`].
pub fn mutation() -> impl Strategy<Value = Mutation> {
    let insertion = prop_oneof![
        prop::sample::select(SPICE).prop_map(<[u8]>::to_vec),
        prop::collection::vec(any::<u8>(), 1..8),
    ];
    prop_oneof![
        (any::<usize>(), 1..16usize).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (any::<usize>(), insertion).prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Replace { at, byte }),
        (any::<usize>(), 1..32usize, any::<usize>())
            .prop_map(|(from, len, to)| Mutation::Duplicate { from, len, to }),
        any::<usize>().prop_map(|at| Mutation::Truncate { at }),
    ]
}

/// `bytes` changed by each of `mutations` in turn.
pub fn apply(bytes: &[u8], mutations: &[Mutation]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    for mutation in mutations {
        let room = out.len() + 1;
        match mutation {
            Mutation::Delete { at, len } => {
                let at = at % room;
                let end = (at + len).min(out.len());
                out.drain(at.min(end)..end);
            }
            Mutation::Insert { at, bytes } => {
                let at = at % room;
                out.splice(at..at, bytes.iter().copied());
            }
            Mutation::Replace { at, byte } if !out.is_empty() => {
                let at = at % out.len();
                out[at] = *byte;
            }
            Mutation::Duplicate { from, len, to } if !out.is_empty() => {
                let from = from % out.len();
                let end = (from + len).min(out.len());
                let copied = out[from..end].to_vec();
                let to = to % (out.len() + 1);
                out.splice(to..to, copied);
            }
            Mutation::Truncate { at } => out.truncate(at % room),
            Mutation::Replace { .. } | Mutation::Duplicate { .. } => {}
        }
    }
    out
}

/// One of `samples`, changed by up to eight mutations.
pub fn mutated(samples: &'static [&'static str]) -> impl Strategy<Value = Vec<u8>> {
    (
        prop::sample::select(samples),
        prop::collection::vec(mutation(), 0..8),
    )
        .prop_map(|(sample, mutations)| apply(sample.as_bytes(), &mutations))
}

/// A random JSON value, objects keyed mostly by `keys` (so that real field names meet
/// values of every type), nested a few levels deep.
pub fn json_value(keys: &'static [&'static str]) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        "[\\PC]{0,12}".prop_map(Value::String),
        prop::sample::select(keys).prop_map(|k| Value::String(k.to_string())),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        let key = prop_oneof![
            3 => prop::sample::select(keys).prop_map(str::to_string),
            1 => "[a-zA-Z_]{0,8}",
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(key, inner, 0..6)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// Input handed to a reader in pieces of the given sizes (cycled), one piece per read, as a
/// pipe may hand it over: the reader's state across reads gets exercised.
#[derive(Debug)]
pub struct Pieces(VecDeque<Vec<u8>>);

impl Pieces {
    /// `input` cut into pieces of `sizes` (each at least one byte).
    pub fn new(input: &[u8], sizes: &[usize]) -> Self {
        let mut pieces = VecDeque::new();
        let mut rest = input;
        for size in sizes.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (piece, after) = rest.split_at((*size).clamp(1, rest.len()));
            pieces.push_back(piece.to_vec());
            rest = after;
        }
        Self(pieces)
    }
}

impl AsyncRead for Pieces {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if let Some(front) = self.0.front_mut() {
            let n = front.len().min(buf.remaining());
            buf.put_slice(&front[..n]);
            front.drain(..n);
            if front.is_empty() {
                self.0.pop_front();
            }
        }
        Poll::Ready(Ok(()))
    }
}
