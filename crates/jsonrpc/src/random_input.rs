//! The line reader under random input: every line is read whole, or over the limit with
//! its edges kept, however the bytes arrive, without a panic or a hang.
//!
//! CI runs 256 cases; `PROPTEST_CASES=100000 cargo test -p deputy-jsonrpc --lib
//! random_input` runs more.

use std::time::Duration;

use deputy_test_support::random_input::{Pieces, config, within};
use proptest::prelude::*;

use crate::frame::{Frame, KEPT_EDGE_BYTES, Oversize};
use crate::line_reader::LineReader;

/// How long one case may take before it counts as a hang.
const HANG: Duration = Duration::from_secs(10);

/// What the reader must return for `input` with `limit`.
fn expected_lines(input: &[u8], limit: usize) -> Vec<Frame> {
    if input.is_empty() {
        return Vec::new();
    }
    let mut lines: Vec<&[u8]> = input.split(|b| *b == b'\n').collect();
    if input.ends_with(b"\n") {
        lines.pop();
    }
    lines
        .into_iter()
        .map(|line| {
            if line.len() <= limit {
                return Frame::Whole(line.to_vec());
            }
            let edge = line.len().min(KEPT_EDGE_BYTES);
            Frame::Oversize(Oversize {
                head: line[..edge].to_vec(),
                tail: line[line.len() - edge..].to_vec(),
                len: line.len() as u64,
            })
        })
        .collect()
}

fn read_all(input: Pieces, limit: usize) -> Vec<Frame> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let mut reader = LineReader::new(input, limit);
        let mut lines = Vec::new();
        while let Some(line) = reader.next_line().await.expect("reading from memory") {
            lines.push(line);
        }
        lines
    })
}

/// A line without its newline: short random bytes, or long runs that cross the limits.
fn line() -> impl Strategy<Value = Vec<u8>> {
    let byte = any::<u8>().prop_filter("no newline", |b| *b != b'\n');
    prop_oneof![
        4 => prop::collection::vec(byte.clone(), 0..200),
        1 => (byte, 4_000..12_000usize, any::<u8>()).prop_map(|(b, len, salt)| {
            (0..len).map(|i| if i % 97 == 0 { salt | 1 } else { b }).map(|c| if c == b'\n' { b'x' } else { c }).collect()
        }),
    ]
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn every_line_is_read_whole_or_by_its_edges_however_it_arrives(
        lines in prop::collection::vec(line(), 0..8),
        trailing_newline in any::<bool>(),
        limit in prop_oneof![0..64usize, 100..5_000usize, Just(20_000usize)],
        sizes in prop::collection::vec(1..6_000usize, 1..8),
    ) {
        let mut input = lines.join(&b'\n');
        if trailing_newline && !input.is_empty() {
            input.push(b'\n');
        }
        let expected = expected_lines(&input, limit);
        let source = Pieces::new(&input, &sizes);
        let read = within(HANG, move || read_all(source, limit));
        prop_assert_eq!(read, expected);
    }
}
