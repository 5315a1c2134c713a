//! How much context a model takes, and how much a request uses.
//!
//! The window is the model family's (`model_context_window` when set, else the
//! built-in table's). Compaction starts at `model_auto_compact_token_limit`,
//! by default 90 % of the window. What a request uses is known from the
//! provider's usage report of the previous response plus an estimate (about four
//! bytes per token) of what was added since; servers that report no usage get the
//! estimate of the whole request.

use deputy_protocol::{ContentItem, ResponseItem, TokenUsage};

use crate::client::{Prompt, ToolSpec};
use crate::config::Config;
use crate::model_family::ModelFamily;

/// Share of the context window at which compaction starts, unless configured.
const AUTO_COMPACT_PERCENT: u64 = 90;

/// Bytes of serialized request per token, for estimates (English text and JSON
/// average close to four).
pub(crate) const BYTES_PER_TOKEN: usize = 4;

impl Config {
    /// The model's context window: `model_context_window`, else its family's.
    pub fn context_window(&self) -> Option<u64> {
        ModelFamily::for_config(self).context_window
    }

    /// Tokens of context past which the history is compacted before the next request:
    /// `model_auto_compact_token_limit`, else 90 % of the context window. `None` when
    /// neither is known (only a provider's "context too long" error compacts then).
    pub fn auto_compact_token_limit(&self) -> Option<u64> {
        self.model_auto_compact_token_limit
            .or_else(|| {
                self.context_window()
                    .map(|window| window.saturating_mul(AUTO_COMPACT_PERCENT) / 100)
            })
            .filter(|&limit| limit > 0)
    }
}

/// Estimated tokens of `bytes` bytes of request.
pub(crate) fn tokens_for_bytes(bytes: usize) -> u64 {
    bytes.div_ceil(BYTES_PER_TOKEN) as u64
}

/// Bytes one history item takes in a request (its JSON form).
pub(crate) fn item_bytes(item: &ResponseItem) -> usize {
    // Serializing plain data cannot fail; an empty count errs on the small side.
    let bytes = serde_json::to_string(item).map_or(0, |text| text.len());
    // An image costs the model about a thousand tokens whatever its encoded size.
    let (count, url_bytes) =
        image_urls(item).fold((0, 0), |(count, sum), url| (count + 1, sum + url.len()));
    bytes.saturating_sub(url_bytes) + count * IMAGE_BYTES
}

/// The URLs of the images an item carries: a message's image parts, a tool output's images.
pub(crate) fn image_urls(item: &ResponseItem) -> Box<dyn Iterator<Item = &str> + '_> {
    match item {
        ResponseItem::Message { content, .. } => {
            Box::new(content.iter().filter_map(|part| match part {
                ContentItem::InputImage { image_url } => Some(image_url.as_str()),
                ContentItem::InputText { .. } | ContentItem::OutputText { .. } => None,
            }))
        }
        ResponseItem::FunctionCallOutput { output, .. }
        | ResponseItem::CustomToolCallOutput { output, .. } => Box::new(output.image_urls()),
        ResponseItem::Reasoning { .. }
        | ResponseItem::FunctionCall { .. }
        | ResponseItem::CustomToolCall { .. }
        | ResponseItem::Other(_) => Box::new(std::iter::empty()),
    }
}

/// What one image is counted as, in bytes of text (≈ 1,000 tokens).
const IMAGE_BYTES: usize = 4_000;

/// Estimated tokens of a whole request: instructions, tool specs and history.
pub(crate) fn estimate_prompt_tokens(prompt: &Prompt) -> u64 {
    let tools: usize = prompt.tools.iter().map(ToolSpec::text_bytes).sum();
    let history: usize = prompt.input.iter().map(item_bytes).sum();
    tokens_for_bytes(prompt.instructions.len() + tools + history)
}

/// What the provider said the last request and its answer took, and how long the
/// history was once that answer was recorded: the base for the next estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UsageMark {
    /// Input plus output tokens of the last response.
    pub(crate) tokens: u64,
    /// History length after the response's items were recorded.
    pub(crate) history_len: usize,
}

impl UsageMark {
    /// A mark from a usage report, unless the report is empty: a server that fills in
    /// zeros has told nothing, and the estimate must not start from nothing.
    pub(crate) fn from_usage(usage: &TokenUsage, history_len: usize) -> Option<Self> {
        let tokens = usage
            .total_tokens
            .max(usage.input_tokens + usage.output_tokens);
        (usage.input_tokens > 0 || tokens > 0).then_some(Self {
            tokens,
            history_len,
        })
    }
}

/// Tokens the request `prompt` would take: the last reported usage plus an estimate of
/// the items recorded since, or, without a usable report, an estimate of the whole.
pub(crate) fn context_tokens(prompt: &Prompt, mark: Option<UsageMark>) -> u64 {
    match mark {
        Some(mark) if mark.history_len <= prompt.input.len() => {
            let added: usize = prompt.input[mark.history_len..]
                .iter()
                .map(item_bytes)
                .sum();
            mark.tokens + tokens_for_bytes(added)
        }
        _ => estimate_prompt_tokens(prompt),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reported_usage_counts_and_only_what_came_after_is_estimated() {
        let prompt = Prompt {
            input: vec![
                ResponseItem::user_text("old"),
                ResponseItem::user_text("x".repeat(4000)),
            ],
            ..Prompt::default()
        };
        let mark = UsageMark {
            tokens: 10_000,
            history_len: 1,
        };
        let estimate = context_tokens(&prompt, Some(mark));
        assert!(
            (11_000..11_100).contains(&estimate),
            "usage plus ~1000 estimated tokens: {estimate}"
        );
        // No report: the whole request is estimated.
        let whole = context_tokens(&prompt, None);
        assert!((1_000..1_100).contains(&whole), "{whole}");
    }

    #[test]
    fn an_image_counts_as_a_thousand_tokens_in_a_message_or_a_tool_output() {
        use deputy_protocol::{FunctionOutput, OutputContentItem};
        let image_url = format!("data:image/png;base64,{}", "A".repeat(1_000_000));
        let message = ResponseItem::Message {
            id: None,
            role: "user".into(),
            content: vec![ContentItem::InputImage {
                image_url: image_url.clone(),
            }],
        };
        let output = ResponseItem::FunctionCallOutput {
            call_id: "c".into(),
            output: FunctionOutput::Content(vec![OutputContentItem::InputImage { image_url }]),
        };
        for item in [message, output] {
            let tokens = tokens_for_bytes(item_bytes(&item));
            assert!(
                (1_000..1_100).contains(&tokens),
                "{tokens} tokens for {item:.80?}"
            );
        }
    }

    #[test]
    fn a_usage_of_zeros_is_no_usage() {
        assert_eq!(UsageMark::from_usage(&TokenUsage::default(), 3), None);
        let usage = TokenUsage {
            input_tokens: 90,
            output_tokens: 10,
            ..TokenUsage::default()
        };
        assert_eq!(
            UsageMark::from_usage(&usage, 3),
            Some(UsageMark {
                tokens: 100,
                history_len: 3
            })
        );
    }
}
