//! Reading the internally tagged enums (`{"type": "<tag>", ...the variant's fields}`)
//! without buffering each object first.
//!
//! serde's derived `Deserialize` for `#[serde(tag = "type")]` collects the whole object
//! into an intermediate tree before it knows the variant, at every level of nesting:
//! most of what decoding a long event log costs. Every serializer writes the tag
//! first (the derived `Serialize` does), so [`tag_first_deserialize!`] reads the tag
//! and hands the rest of the object straight to the variant's payload. An object whose
//! tag comes later is still read: buffered as a JSON object, then decoded from it.

/// Implements `Deserialize` for an internally tagged enum whose `Serialize` is derived
/// with `#[serde(tag = "type")]`: `tag_first_deserialize!(Enum, "what it is", {
/// "tag" => Variant(Payload), "other" => Unit, "old" => Variant(Read as Payload), ... })`
/// (the last form reads `Read` and converts it, for a variant written under several tags).
/// Every variant must be listed (a missing one does not compile); the tags must be the
/// ones `Serialize` writes.
macro_rules! tag_first_deserialize {
    ($ty:ident, $expecting:literal, { $($tag:literal => $variant:ident $(($payload:ty $(as $into:ty)?))?),+ $(,)? }) => {
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                const TAGS: &[&str] = &[$($tag),+];

                /// The variant `tag` names, decoded from the rest of its object.
                fn variant<'de, R>(tag: &str, rest: R) -> Result<$ty, R::Error>
                where
                    R: serde::Deserializer<'de>,
                {
                    match tag {
                        $($tag => $crate::tagged::tag_first_deserialize!(@variant $ty, rest, $variant $(, $payload $(as $into)?)?),)+
                        other => Err(serde::de::Error::unknown_variant(other, TAGS)),
                    }
                }

                struct Visitor;

                impl<'de> serde::de::Visitor<'de> for Visitor {
                    type Value = $ty;

                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str($expecting)
                    }

                    fn visit_map<A>(self, mut map: A) -> Result<$ty, A::Error>
                    where
                        A: serde::de::MapAccess<'de>,
                    {
                        use serde::de::Error as _;
                        use $crate::tagged::Text;
                        let Some(Text(key)) = map.next_key::<Text<'de>>()? else {
                            return Err(A::Error::missing_field("type"));
                        };
                        if key == "type" {
                            let Text(tag) = map.next_value::<Text<'de>>()?;
                            return variant(&tag, serde::de::value::MapAccessDeserializer::new(map));
                        }
                        let mut object = serde_json::Map::new();
                        object.insert(key.into_owned(), map.next_value()?);
                        while let Some((key, value)) = map.next_entry::<String, serde_json::Value>()? {
                            object.insert(key, value);
                        }
                        let tag = match object.remove("type") {
                            Some(serde_json::Value::String(tag)) => tag,
                            Some(_) => return Err(A::Error::custom("`type` is not a string")),
                            None => return Err(A::Error::missing_field("type")),
                        };
                        variant(&tag, serde_json::Value::Object(object)).map_err(A::Error::custom)
                    }
                }

                deserializer.deserialize_map(Visitor)
            }
        }

        // Every variant is listed above (a variant read under several tags is listed more
        // than once).
        #[allow(unreachable_patterns, reason = "a variant may be listed under several tags")]
        const _: fn(&$ty) = |value| match value {
            $($ty::$variant { .. } => {})+
        };
    };
    (@variant $ty:ident, $rest:ident, $variant:ident, $payload:ty) => {
        <$payload as serde::Deserialize>::deserialize($rest).map($ty::$variant)
    };
    (@variant $ty:ident, $rest:ident, $variant:ident, $payload:ty as $into:ty) => {
        // `into` boxes the converted value when the variant holds a box.
        <$payload as serde::Deserialize>::deserialize($rest).map(|read| $ty::$variant(<$into>::from(read).into()))
    };
    (@variant $ty:ident, $rest:ident, $variant:ident) => {
        <serde::de::IgnoredAny as serde::Deserialize>::deserialize($rest).map(|_| $ty::$variant)
    };
}

pub(crate) use tag_first_deserialize;

/// A key, tag or id, borrowed from the input when it can be (serde's `Cow<str>` always
/// copies).
#[derive(Debug)]
pub(crate) struct Text<'a>(pub(crate) std::borrow::Cow<'a, str>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Text<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor<'a>(std::marker::PhantomData<&'a ()>);

        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visitor<'a> {
            type Value = Text<'a>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Text<'a>, E> {
                Ok(Text(std::borrow::Cow::Borrowed(text)))
            }

            fn visit_str<E>(self, text: &str) -> Result<Text<'a>, E> {
                Ok(Text(std::borrow::Cow::Owned(text.to_string())))
            }

            fn visit_string<E>(self, text: String) -> Result<Text<'a>, E> {
                Ok(Text(std::borrow::Cow::Owned(text)))
            }
        }

        deserializer.deserialize_str(Visitor(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::{Value, json};

    use crate::{ThreadEventMsg, ThreadItem};

    /// One object of every item kind, as `Serialize` writes it.
    fn items() -> Vec<Value> {
        vec![
            json!({"type": "user_message", "id": "i1", "text": "hi"}),
            json!({"type": "agent_message", "id": "i2", "text": "done \"ok\""}),
            json!({"type": "reasoning", "id": "i3", "text": "thinking"}),
            json!({"type": "command_execution", "id": "i4", "call_id": "c4",
                "command": ["bash", "-lc", "ls"], "cwd": "/w", "parsed_cmd": [],
                "status": "completed", "started": true, "exit_code": 0, "stdout": "a\n",
                "stderr": "", "aggregated_output": "a\n", "duration": {"secs": 0, "nanos": 5},
                "formatted_output": "Exit code: 0"}),
            json!({"type": "file_change", "id": "i5", "call_id": "c5",
                "changes": {"/w/a.txt": {"type": "add", "content": "x\n"}},
                "status": "in_progress", "started": false, "auto_approved": false,
                "stdout": "", "stderr": ""}),
            json!({"type": "plan", "id": "i6", "plan": [{"step": "read", "status": "completed"}]}),
            json!({"type": "entered_review_mode", "id": "i7", "review": "the changes",
                "request": {"target": {"type": "uncommitted_changes"},
                    "user_facing_hint": "the uncommitted changes"}}),
            json!({"type": "exited_review_mode", "id": "i8", "review": "the changes",
                "output": null}),
            json!({"type": "context_compaction", "id": "i9", "status": "completed"}),
            json!({"type": "web_search", "id": "ws_1", "query": "rust landlock abi"}),
            json!({"type": "mcp_tool_call", "id": "i10", "call_id": "c10", "server": "docs",
                "tool": "search", "arguments": {"q": "x"}, "status": "completed",
                "started": true, "result": {"content": [{"type": "text", "text": "hit"}],
                    "isError": false}, "duration": {"secs": 0, "nanos": 7}}),
        ]
    }

    /// One object of every event kind, as `Serialize` writes it.
    fn events() -> Vec<Value> {
        let item = items()[0].clone();
        vec![
            json!({"type": "session_configured", "session_id": "t", "model": "m",
                "model_provider_id": "p", "approval_policy": "never",
                "sandbox_policy": {"type": "read-only", "network_access": false},
                "cwd": "/w", "history_log_id": 0, "history_entry_count": 0}),
            json!({"type": "turn_started", "turn_id": "u1", "model_context_window": 1000}),
            json!({"type": "item_started", "item": item}),
            json!({"type": "item_updated", "item": items()[3]}),
            json!({"type": "item_completed", "item": items()[4]}),
            json!({"type": "agent_message_delta", "item_id": "i2", "delta": "do"}),
            json!({"type": "reasoning_delta", "item_id": "i3", "delta": "thi"}),
            json!({"type": "command_output_delta", "item_id": "i4", "call_id": "c4",
                "stream": "stdout", "chunk": "YQo="}),
            json!({"type": "exec_approval_request", "item_id": "i4", "call_id": "c4",
                "turn_id": "u1", "command": ["rm", "x"], "cwd": "/w", "reason": "why",
                "parsed_cmd": []}),
            json!({"type": "patch_approval_request", "item_id": "i5", "call_id": "c5",
                "turn_id": "u1", "changes": {"/w/a.txt": {"type": "delete", "content": "x"}}}),
            json!({"type": "mcp_tool_call_approval_request", "item_id": "i6", "call_id": "c6",
                "turn_id": "u1", "server": "docs", "tool": "search", "arguments": {"q": "x"}}),
            json!({"type": "mcp_elicitation_request", "item_id": "i6", "call_id": "c6",
                "turn_id": "u1", "server": "docs", "message": "Your name?",
                "requested_schema": {"type": "object", "properties": {}}}),
            json!({"type": "user_input_request", "item_id": "i7", "call_id": "c7",
                "turn_id": "u1", "questions": [{"id": "q1", "header": "Db", "question": "Which?",
                "options": [{"label": "sqlite", "description": "a file"}]}]}),
            json!({"type": "approval_resolved", "item_id": "i4", "call_id": "c4",
                "decision": "approved"}),
            json!({"type": "turn_diff", "unified_diff": "--- a\n+++ b\n"}),
            json!({"type": "token_count", "info": null, "rate_limits": null}),
            json!({"type": "stream_error", "message": "retrying"}),
            json!({"type": "warning", "message": "careful"}),
            json!({"type": "turn_complete", "turn_id": "u1", "last_agent_message": "done"}),
            json!({"type": "turn_aborted", "turn_id": "u1", "reason": "interrupted"}),
            json!({"type": "turn_failed", "message": "model unreachable"}),
            json!({"type": "shutdown_complete"}),
            json!({"type": "mcp_startup_update", "server": "docs",
                "status": {"state": "failed", "error": "no such file"}}),
            json!({"type": "mcp_startup_complete", "ready": ["a"],
                "failed": [{"server": "docs", "error": "no such file"}], "cancelled": []}),
        ]
    }

    /// `value`'s JSON text with its `type` key written first or last.
    fn with_tag(value: &Value, first: bool) -> String {
        let mut fields = value.as_object().cloned().unwrap_or_default();
        let tag = fields.remove("type").unwrap_or(Value::Null);
        let rest = serde_json::to_string(&fields).unwrap_or_default();
        let rest = rest
            .strip_prefix('{')
            .and_then(|rest| rest.strip_suffix('}'))
            .unwrap_or_default();
        let comma = if rest.is_empty() { "" } else { "," };
        if first {
            format!("{{\"type\":{tag}{comma}{rest}}}")
        } else {
            format!("{{{rest}{comma}\"type\":{tag}}}")
        }
    }

    fn item_kind(item: &ThreadItem) -> usize {
        match item {
            ThreadItem::UserMessage(_) => 0,
            ThreadItem::AgentMessage(_) => 1,
            ThreadItem::Reasoning(_) => 2,
            ThreadItem::CommandExecution(_) => 3,
            ThreadItem::FileChange(_) => 4,
            ThreadItem::Plan(_) => 5,
            ThreadItem::EnteredReviewMode(_) => 6,
            ThreadItem::ExitedReviewMode(_) => 7,
            ThreadItem::ContextCompaction(_) => 8,
            ThreadItem::WebSearch(_) => 10,
            ThreadItem::McpToolCall(_) => 9,
        }
    }

    fn event_kind(msg: &ThreadEventMsg) -> usize {
        match msg {
            ThreadEventMsg::SessionConfigured(_) => 0,
            ThreadEventMsg::TurnStarted(_) => 1,
            ThreadEventMsg::ItemStarted(_) => 2,
            ThreadEventMsg::ItemUpdated(_) => 3,
            ThreadEventMsg::ItemCompleted(_) => 4,
            ThreadEventMsg::AgentMessageDelta(_) => 5,
            ThreadEventMsg::ReasoningDelta(_) => 6,
            ThreadEventMsg::CommandOutputDelta(_) => 7,
            ThreadEventMsg::QuestionAsked(asked) => match asked.question {
                crate::Question::Exec(_) => 8,
                crate::Question::Patch(_) => 9,
                crate::Question::McpToolCall(_) => 19,
                crate::Question::McpElicitation(_) => 22,
                crate::Question::UserInput(_) => 23,
            },
            ThreadEventMsg::ApprovalResolved(_) => 10,
            ThreadEventMsg::TurnDiff(_) => 11,
            ThreadEventMsg::TokenCount(_) => 12,
            ThreadEventMsg::StreamError(_) => 13,
            ThreadEventMsg::Warning(_) => 14,
            ThreadEventMsg::TurnComplete(_) => 15,
            ThreadEventMsg::TurnAborted(_) => 16,
            ThreadEventMsg::TurnFailed(_) => 17,
            ThreadEventMsg::ShutdownComplete => 18,
            ThreadEventMsg::McpStartupUpdate(_) => 20,
            ThreadEventMsg::McpStartupComplete(_) => 21,
        }
    }

    /// Each sample reads back, tag first or last, to what writes it again; together
    /// they are of every kind, so every tag read is the tag written.
    fn reads_back<T>(samples: Vec<Value>, kind: fn(&T) -> usize, kinds: usize)
    where
        T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
    {
        let mut seen = vec![false; kinds];
        for sample in samples {
            let text = with_tag(&sample, true);
            let first: T = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(serde_json::to_value(&first).expect("encode"), sample);
            let text = with_tag(&sample, false);
            let last: T = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(last, first, "{text}");
            seen[kind(&first)] = true;
        }
        assert_eq!(seen, vec![true; kinds], "a kind has no sample");
    }

    #[test]
    fn every_item_reads_back_with_its_tag_anywhere() {
        reads_back::<ThreadItem>(items(), item_kind, 11);
    }

    #[test]
    fn every_event_reads_back_with_its_tag_anywhere() {
        reads_back::<ThreadEventMsg>(events(), event_kind, 24);
    }

    #[test]
    fn an_escaped_key_or_tag_reads_as_any_other() {
        let msg: ThreadEventMsg =
            serde_json::from_str(r#"{"typ\u0065":"warn\u0069ng","message":"x"}"#).expect("read");
        assert_eq!(
            msg,
            ThreadEventMsg::Warning(crate::WarningEvent {
                message: "x".into()
            })
        );
    }

    #[test]
    fn a_bad_tag_is_a_clear_error() {
        let error = |text: &str| {
            serde_json::from_str::<ThreadEventMsg>(text)
                .expect_err(text)
                .to_string()
        };
        assert!(
            error(r#"{"type":"nope"}"#)
                .contains("unknown variant `nope`, expected one of `session_configured`")
        );
        assert!(error(r#"{"message":"x","type":"nope"}"#).contains("unknown variant `nope`"));
        assert!(error(r#"{"message":"x"}"#).contains("missing field `type`"));
        assert!(error(r#"{}"#).contains("missing field `type`"));
        assert!(error(r#"{"type":7}"#).contains("invalid type"));
        assert!(error(r#"{"message":"x","type":7}"#).contains("`type` is not a string"));
        assert!(error(r#"[1]"#).contains("a thread event"));
        assert!(error(r#"{"type":"warning"}"#).contains("missing field `message`"));
    }
}
