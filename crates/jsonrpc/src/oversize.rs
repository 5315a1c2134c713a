//! What can be read of a message over the size limit, from the edges that were kept.
//!
//! Only the first and last few KiB of such a message exist, so its id is looked for
//! where clients put it: among the leading fields (serde, pydantic write `id` before
//! `params`) or as the trailing field (the TypeScript SDK writes it last).

use serde_json::value::RawValue;

use crate::frame::Oversize;

/// The top-level fields readable from an object's beginning or end.
struct Fields<'a> {
    /// Each key in order, with its value when it is whole.
    pairs: Vec<(String, Option<&'a RawValue>)>,
    /// Just past the object's closing `}`, when it was reached.
    end: Option<usize>,
}

impl<'a> Fields<'a> {
    fn has(&self, key: &str) -> bool {
        self.pairs.iter().any(|(k, _)| k == key)
    }

    fn value(&self, key: &str) -> Option<&'a RawValue> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| *v)
    }
}

/// What an oversize message was, as far as its edges tell.
#[derive(Debug)]
pub enum OversizeKind<'a> {
    /// A request (or a message that cannot be told apart from one): answer it, under
    /// this id when one was found that may be echoed (see [`echoable`]).
    Request(Option<&'a RawValue>),
    /// The peer's answer to one of ours: never answered, only dropped.
    Response,
}

/// Reads what the edges of `message` say it is.
pub fn read_edges(message: &Oversize) -> OversizeKind<'_> {
    let leading = leading_fields(&message.head);
    if !leading.has("method") && (leading.has("result") || leading.has("error")) {
        return OversizeKind::Response;
    }
    let id = leading.value("id").or_else(|| trailing_id(&message.tail));
    OversizeKind::Request(id.filter(|id| echoable(id)))
}

/// Whether `id` may stand as the id of an answer: JSON-RPC allows strings and
/// numbers; anything else is answered with `null`.
pub fn echoable(id: &RawValue) -> bool {
    id.get()
        .bytes()
        .next()
        .is_some_and(|b| b == b'"' || b == b'-' || b.is_ascii_digit())
}

/// Why an oversize request is refused, in the words every transport uses.
pub fn too_large(len: u64, limit: usize) -> String {
    let limit = if limit.is_multiple_of(1024 * 1024) {
        format!("{} MiB", limit / (1024 * 1024))
    } else {
        format!("{limit} bytes")
    };
    format!("the message is {len} bytes, more than the {limit} limit")
}

/// The fields at the start of `head`, up to the first one cut off.
fn leading_fields(head: &[u8]) -> Fields<'_> {
    let at = skip_whitespace(head, 0);
    if head.get(at) != Some(&b'{') {
        return Fields {
            pairs: Vec::new(),
            end: None,
        };
    }
    fields_from(head, at + 1)
}

/// The id when it is the last field of the object `tail` ends with.
fn trailing_id(tail: &[u8]) -> Option<&RawValue> {
    const KEY: &[u8] = b"\"id\"";
    let mut candidates: Vec<usize> = tail
        .windows(KEY.len())
        .enumerate()
        .filter(|(_, window)| *window == KEY)
        .map(|(at, _)| at)
        .collect();
    // The last candidate is nearest the end, where the real field is; one inside a
    // string or a nested object cannot run on to the line's final `}`.
    candidates.reverse();
    candidates.into_iter().find_map(|at| {
        let fields = fields_from(tail, at);
        let closes_the_line = fields
            .end
            .is_some_and(|end| skip_whitespace(tail, end) == tail.len());
        match fields.pairs.first() {
            Some((key, Some(value))) if closes_the_line && key == "id" => Some(*value),
            _ => None,
        }
    })
}

/// Reads `"key": value` pairs from `bytes[at..]` until the object closes or the
/// bytes run out; a value is whole only when a `,` or `}` follows it.
fn fields_from(bytes: &[u8], mut at: usize) -> Fields<'_> {
    let mut pairs = Vec::new();
    loop {
        at = skip_whitespace(bytes, at);
        if bytes.get(at) == Some(&b'}') && pairs.is_empty() {
            return Fields {
                pairs,
                end: Some(at + 1),
            };
        }
        let Some((key, after_key)) = next_value::<String>(bytes, at) else {
            return Fields { pairs, end: None };
        };
        at = skip_whitespace(bytes, after_key);
        if bytes.get(at) != Some(&b':') {
            return Fields { pairs, end: None };
        }
        let parsed = next_value::<&RawValue>(bytes, skip_whitespace(bytes, at + 1));
        let Some((value, after_value)) = parsed else {
            pairs.push((key, None));
            return Fields { pairs, end: None };
        };
        at = skip_whitespace(bytes, after_value);
        match bytes.get(at) {
            Some(b',') => {
                pairs.push((key, Some(value)));
                at += 1;
            }
            Some(b'}') => {
                pairs.push((key, Some(value)));
                return Fields {
                    pairs,
                    end: Some(at + 1),
                };
            }
            _ => {
                pairs.push((key, None));
                return Fields { pairs, end: None };
            }
        }
    }
}

/// One JSON value at `bytes[at..]` and the position just past it.
fn next_value<'a, T: serde::Deserialize<'a>>(bytes: &'a [u8], at: usize) -> Option<(T, usize)> {
    let rest = bytes.get(at..)?;
    let mut values = serde_json::Deserializer::from_slice(rest).into_iter::<T>();
    let value = values.next()?.ok()?;
    Some((value, at + values.byte_offset()))
}

fn skip_whitespace(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An oversize message made of `start`, a long string, and `end`, as it is kept.
    fn oversize(start: &str, end: &str) -> Oversize {
        let filler = "x".repeat(10_000);
        let whole = format!("{start}{filler}{end}");
        Oversize {
            head: whole.as_bytes()[..4096].to_vec(),
            tail: whole.as_bytes()[whole.len() - 4096..].to_vec(),
            len: whole.len() as u64,
        }
    }

    fn id_of(message: &Oversize) -> Option<String> {
        match read_edges(message) {
            OversizeKind::Request(id) => id.map(|id| id.get().to_string()),
            OversizeKind::Response => panic!("read as a response"),
        }
    }

    #[test]
    fn the_id_is_found_first_or_last_and_kept_as_written() {
        let leading = oversize(
            r#"{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"prompt":""#,
            r#""}}"#,
        );
        let trailing = oversize(
            r#"{"method":"tools/call","params":{"arguments":{"prompt":""#,
            r#""}},"jsonrpc":"2.0","id":18446744073709551616}"#,
        );
        assert_eq!(id_of(&leading).as_deref(), Some(r#""abc""#));
        assert_eq!(id_of(&trailing).as_deref(), Some("18446744073709551616"));
        assert_eq!(
            too_large(20 << 20, 16 << 20),
            "the message is 20971520 bytes, more than the 16 MiB limit"
        );
    }

    #[test]
    fn an_id_that_is_cut_off_or_inside_the_payload_is_not_trusted() {
        // `"id":12` at the very end of the head might be the start of `123`.
        let mut cut = oversize(r#"{"jsonrpc":"2.0","id":12345"#, "}");
        cut.head.truncate(r#"{"jsonrpc":"2.0","id":12"#.len());
        assert_eq!(id_of(&cut), None);
        // A nested `"id"` near the end does not close the message.
        let nested = oversize(
            r#"{"method":"tools/call","params":{"text":""#,
            r#"","meta":{"id":7}},"jsonrpc":"2.0"}"#,
        );
        assert_eq!(id_of(&nested), None);
        // An escaped `\"id\"` inside the text is not a key.
        let escaped = oversize(r#"{"method":"m","params":{"text":""#, r#"\"id\":7}"}}"#);
        assert_eq!(id_of(&escaped), None);
        // An id that is neither a string nor a number is not echoed.
        let object = oversize(r#"{"id":{"a":1},"method":"m","params":{"text":""#, r#""}}"#);
        assert_eq!(id_of(&object), None);
    }

    #[test]
    fn an_oversize_response_is_read_as_one() {
        let response = oversize(r#"{"jsonrpc":"2.0","id":1,"result":{"content":""#, r#""}}"#);
        assert!(matches!(read_edges(&response), OversizeKind::Response));
    }
}
