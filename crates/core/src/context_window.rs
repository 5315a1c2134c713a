//! How much context a model takes, and how much a request uses.
//!
//! The window comes from `model_context_window` when set, else from a built-in
//! table of common models. Compaction starts at `model_auto_compact_token_limit`,
//! by default 90 % of the window. What a request uses is known from the
//! provider's usage report of the previous response plus an estimate (about four
//! bytes per token) of what was added since; servers that report no usage get the
//! estimate of the whole request.

use deputy_protocol::{ContentItem, ResponseItem, TokenUsage};

use crate::client::Prompt;
use crate::config::Config;

/// Share of the context window at which compaction starts, unless configured.
const AUTO_COMPACT_PERCENT: u64 = 90;

/// Bytes of serialized request per token, for estimates (English text and JSON
/// average close to four).
pub(crate) const BYTES_PER_TOKEN: usize = 4;

/// Context windows (input tokens) of common models, by name prefix; the longest
/// matching prefix wins. Numbers are the providers' published limits.
const KNOWN_WINDOWS: &[(&str, u64)] = &[
    // OpenAI: the gpt-5 family takes 400k in total, of which 128k are output.
    ("gpt-5", 272_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("gpt-oss", 131_072),
    ("codex-mini", 200_000),
    ("o1-mini", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    // Open models as local servers name them (`qwen2.5-coder:7b`, `llama3.1:8b`…).
    ("qwen2.5-coder", 32_768),
    ("qwen2.5", 32_768),
    ("qwen3-coder", 262_144),
    ("qwen3", 40_960),
    ("llama3.1", 131_072),
    ("llama3.2", 131_072),
    ("llama3.3", 131_072),
    ("llama-3.1", 131_072),
    ("llama-3.2", 131_072),
    ("llama-3.3", 131_072),
    ("llama3", 8_192),
    ("llama-3", 8_192),
    ("deepseek-coder-v2", 163_840),
    ("codestral", 256_000),
    ("devstral", 131_072),
    ("mistral-small", 131_072),
    ("gemma3", 131_072),
];

/// The built-in context window of `model`, if the table knows it. A provider
/// prefix (`openai/gpt-5`, `Qwen/Qwen2.5-Coder-7B`) is ignored and case does not matter.
pub fn builtin_context_window(model: &str) -> Option<u64> {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    KNOWN_WINDOWS
        .iter()
        .filter(|(prefix, _)| name.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|&(_, window)| window)
}

impl Config {
    /// The model's context window: `model_context_window`, else the built-in table's.
    pub fn context_window(&self) -> Option<u64> {
        self.model_context_window
            .or_else(|| builtin_context_window(&self.model))
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
    let images = match item {
        ResponseItem::Message { content, .. } => content
            .iter()
            .filter_map(|part| match part {
                ContentItem::InputImage { image_url } => Some(image_url.len()),
                ContentItem::InputText { .. } | ContentItem::OutputText { .. } => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    bytes.saturating_sub(images.iter().sum::<usize>()) + images.len() * IMAGE_BYTES
}

/// What one image is counted as, in bytes of text (≈ 1,000 tokens).
const IMAGE_BYTES: usize = 4_000;

/// Estimated tokens of a whole request: instructions, tool specs and history.
pub(crate) fn estimate_prompt_tokens(prompt: &Prompt) -> u64 {
    let tools: usize = prompt
        .tools
        .iter()
        .map(|tool| tool.name.len() + tool.description.len() + tool.parameters.to_string().len())
        .sum();
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
    fn the_table_matches_names_as_providers_spell_them() {
        assert_eq!(builtin_context_window("gpt-5-codex"), Some(272_000));
        assert_eq!(builtin_context_window("gpt-5.1-mini"), Some(272_000));
        assert_eq!(builtin_context_window("gpt-4.1-mini"), Some(1_047_576));
        assert_eq!(builtin_context_window("gpt-4o-mini"), Some(128_000));
        assert_eq!(builtin_context_window("o1-mini"), Some(128_000));
        assert_eq!(builtin_context_window("o3-pro"), Some(200_000));
        assert_eq!(builtin_context_window("qwen2.5-coder:7b"), Some(32_768));
        assert_eq!(
            builtin_context_window("Qwen/Qwen2.5-Coder-32B-Instruct"),
            Some(32_768)
        );
        assert_eq!(builtin_context_window("llama3.1:8b"), Some(131_072));
        assert_eq!(builtin_context_window("llama3:8b"), Some(8_192));
        assert_eq!(builtin_context_window("mock-model"), None);
    }

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
