//! Compaction: when the history grows too long for the model, the model writes a
//! handoff summary of it, and the history becomes the thread's initial context, the
//! recent user messages (bounded) and that summary.
//!
//! It runs before a model request that would pass the auto-compact limit, after a
//! provider's "context too long" error (then the request is retried once), or as a
//! turn of its own on `Op::Compact`. The summary request is itself kept within the
//! window: the oldest images are dropped from it first, then the oldest tool outputs,
//! then the oldest items, never the initial context or the current task. Failing to compact ends the turn
//! with an error; it is never retried in a loop.

// Runs on the async runtime: no blocking std calls (see clippy.toml).
#![cfg_attr(not(test), warn(clippy::disallowed_methods))]

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use deputy_protocol::{
    ContentItem, ContextCompactionItem, ContextCompactionStatus, FunctionOutput, OutputContentItem,
    ResponseItem, ThreadEventMsg, ThreadItem, WarningEvent,
};

use crate::client::Prompt;
use crate::context::{TurnContext, TurnStop, new_item_id};
use crate::context_window::{self, item_bytes, tokens_for_bytes};
use crate::instructions;
use crate::sampling::{Sampled, Visibility, sample_with_retries};

/// deputy's own request for a summary, used unless `compact_prompt` replaces it.
pub const DEFAULT_COMPACT_PROMPT: &str = include_str!("prompts/compact_prompt.md");

/// What the summary message of a compacted history starts with, so the model reads
/// it as a handoff and a later compaction does not keep it as a user's message.
pub const SUMMARY_PREFIX: &str = include_str!("prompts/summary_prefix.md");

/// Most tokens of earlier user messages a compacted history keeps (newest first).
const USER_MESSAGES_MAX_TOKENS: u64 = 20_000;

/// Share (in percent) of the context window the summary request may fill; the rest
/// is room for the summary itself.
const SUMMARY_REQUEST_PERCENT: u64 = 95;

/// How many times a summary request refused as too long is shrunk and sent again.
const SUMMARY_ATTEMPTS: usize = 3;

/// What the output of a tool call reads once dropped from a summary request.
const DROPPED_OUTPUT: &str = "[output dropped to fit the summary request]";

/// What an image becomes once dropped from a summary request.
const DROPPED_IMAGE: &str = "[image dropped to fit the summary request]";

/// Why the history is being compacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CompactTrigger {
    /// `Op::Compact`.
    Manual,
    /// The next request would take `tokens`, past the `limit`.
    AutoLimit {
        /// The estimated size of the next request.
        tokens: u64,
        /// `model_auto_compact_token_limit` (or its default).
        limit: u64,
    },
    /// The provider refused a request as longer than the context window.
    ContextWindowExceeded,
}

/// Compacts the thread's history, reporting it as a `context_compaction` item.
pub(crate) async fn compact(ctx: &TurnContext, trigger: CompactTrigger) -> Result<(), TurnStop> {
    tracing::info!(turn = %ctx.turn_id, ?trigger, "compacting the conversation");
    let mut item = ContextCompactionItem {
        id: new_item_id(),
        status: ContextCompactionStatus::InProgress,
    };
    // Left open on failure: the turn's end completes it as failed.
    ctx.item_started(ThreadItem::ContextCompaction(item.clone()));
    let history = ctx.session.history_snapshot();
    let summary = summarize(ctx, &history).await?;
    let summary_text = format!("{SUMMARY_PREFIX}\n{summary}");
    let user_budget = ctx
        .config
        .auto_compact_token_limit()
        .map_or(USER_MESSAGES_MAX_TOKENS, |limit| {
            USER_MESSAGES_MAX_TOKENS.min(limit / 4)
        });
    let compacted = compacted_history(&history, &summary_text, user_budget);
    ctx.session.replace_history(compacted, summary_text);
    // On disk before anything else happens: a crash from here on resumes compacted.
    ctx.session
        .flush_rollout()
        .await
        .map_err(TurnStop::Rollout)?;
    item.status = ContextCompactionStatus::Completed;
    ctx.item_completed(ThreadItem::ContextCompaction(item));
    ctx.emit(ThreadEventMsg::Warning(WarningEvent {
        message: "The conversation was compacted: the model now works from a summary of it. \
                  Threads that compact again and again lose detail; start a new thread for a new task."
            .into(),
    }));
    Ok(())
}

/// Asks the model for a summary of `history`, shrinking the request when it is (or
/// the provider says it is) too long for the window.
async fn summarize(ctx: &TurnContext, history: &[ResponseItem]) -> Result<String, TurnStop> {
    let config = &ctx.config;
    let compact_prompt = config
        .compact_prompt
        .as_deref()
        .filter(|prompt| !prompt.trim().is_empty())
        .unwrap_or(DEFAULT_COMPACT_PROMPT);
    // The turn's own instructions and request fields, so that the summary request shares
    // the conversation's cached prefix (the instructions explain only built-in tools).
    let (_, base) = crate::request::for_turn(ctx, &crate::tools::ThreadTools::default());
    let instructions = base.instructions.clone();
    let mut budget = summary_budget(config.context_window(), config.auto_compact_token_limit());
    for _ in 0..SUMMARY_ATTEMPTS {
        let fitted = fit_summary_request(history, compact_prompt, &instructions, budget)
            .map_err(TurnStop::Compaction)?;
        if fitted.dropped_images > 0 || fitted.dropped_outputs > 0 || fitted.dropped_items > 0 {
            tracing::info!(
                images = fitted.dropped_images,
                outputs = fitted.dropped_outputs,
                items = fitted.dropped_items,
                "left old items out of the summary request to fit the context window"
            );
        }
        // No tools: the model is to write, not act.
        let prompt = Prompt {
            instructions: instructions.clone(),
            input: fitted.input,
            tools: Arc::default(),
            parallel_tool_calls: false,
            // The summary is prose for the next model call, whatever the answer's format.
            output_schema: None,
            ..base.clone()
        };
        match sample_with_retries(ctx, &prompt, Visibility::Quiet).await {
            Ok(Sampled { items, .. }) => {
                let summary = last_assistant_text(&items);
                return if summary.trim().is_empty() {
                    Err(TurnStop::Compaction(
                        "cannot compact the conversation: the model returned no summary".into(),
                    ))
                } else {
                    Ok(summary)
                };
            }
            // Our estimate was short of the provider's count: send less.
            Err(TurnStop::Model(err)) if err.is_context_window_exceeded() => {
                tracing::info!(%err, "summary request too long; shrinking it");
                budget = Some(fitted.tokens.saturating_mul(3) / 4);
            }
            Err(TurnStop::Model(err)) => {
                return Err(TurnStop::Compaction(format!(
                    "cannot compact the conversation: {err}"
                )));
            }
            Err(stop) => return Err(stop),
        }
    }
    Err(TurnStop::Compaction(format!(
        "cannot compact the conversation: the model refused the summary request as too long {SUMMARY_ATTEMPTS} times"
    )))
}

/// How many tokens the summary request may take: most of the window, or the
/// compaction limit when only that is known; `None` when neither is.
fn summary_budget(window: Option<u64>, limit: Option<u64>) -> Option<u64> {
    match window {
        Some(window) => Some(window.saturating_mul(SUMMARY_REQUEST_PERCENT) / 100),
        None => limit,
    }
}

/// A summary request cut down to a budget.
#[derive(Debug)]
struct FittedRequest {
    /// The history to summarize, then the compact prompt.
    input: Vec<ResponseItem>,
    /// Its estimated size, instructions included.
    tokens: u64,
    /// Images replaced by a placeholder.
    dropped_images: usize,
    /// Tool outputs replaced by a placeholder.
    dropped_outputs: usize,
    /// Items left out entirely.
    dropped_items: usize,
}

/// `history` plus the compact prompt, within `budget` tokens: the oldest images are
/// dropped first, then the oldest tool outputs emptied, then the oldest items left out
/// (a call with its output), but never the initial context, the latest user message or
/// the prompt.
fn fit_summary_request(
    history: &[ResponseItem],
    compact_prompt: &str,
    instructions: &str,
    budget: Option<u64>,
) -> Result<FittedRequest, String> {
    let mut input: Vec<ResponseItem> = history.to_vec();
    input.push(ResponseItem::user_text(compact_prompt));
    let mut sizes: Vec<usize> = input.iter().map(item_bytes).collect();
    // Kept as a running total: long histories are trimmed item by item.
    let mut bytes = instructions.len() + sizes.iter().sum::<usize>();
    let mut fitted = FittedRequest {
        tokens: tokens_for_bytes(bytes),
        input: Vec::new(),
        dropped_images: 0,
        dropped_outputs: 0,
        dropped_items: 0,
    };
    let Some(budget) = budget else {
        fitted.input = input;
        return Ok(fitted);
    };
    let mut shrink = |at: usize, new_size: usize, fitted: &mut FittedRequest| {
        bytes = bytes - sizes[at] + new_size;
        sizes[at] = new_size;
        fitted.tokens = tokens_for_bytes(bytes);
    };

    // 1. Images, oldest first: each costs as much as a page of text, and a summary
    //    cannot keep one anyway.
    for (at, item) in input.iter_mut().enumerate() {
        if fitted.tokens <= budget {
            break;
        }
        let dropped = drop_images(item);
        if dropped > 0 {
            fitted.dropped_images += dropped;
            shrink(at, item_bytes(item), &mut fitted);
        }
    }

    // 2. Tool outputs, oldest first: usually the bulk, and the least needed later.
    for (at, item) in input.iter_mut().enumerate() {
        if fitted.tokens <= budget {
            break;
        }
        if let ResponseItem::FunctionCallOutput { output, .. }
        | ResponseItem::CustomToolCallOutput { output, .. } = item
            && *output != *DROPPED_OUTPUT
        {
            *output = DROPPED_OUTPUT.into();
            fitted.dropped_outputs += 1;
            shrink(at, item_bytes(item), &mut fitted);
        }
    }

    // 3. Whole items, oldest first, keeping what the task cannot do without.
    let context_len = input
        .iter()
        .take_while(|item| instructions::is_initial_context(item))
        .count();
    let prompt_at = input.len() - 1;
    let task_at = input[..prompt_at]
        .iter()
        .rposition(is_user_message)
        .filter(|&at| at >= context_len);
    let outputs: HashMap<&str, usize> = input
        .iter()
        .enumerate()
        .filter_map(|(at, item)| Some((item.answered_call_id()?, at)))
        .collect();
    let mut keep = vec![true; input.len()];
    for at in context_len..prompt_at {
        if fitted.tokens <= budget {
            break;
        }
        if Some(at) == task_at || !keep[at] {
            continue;
        }
        keep[at] = false;
        fitted.dropped_items += 1;
        shrink(at, 0, &mut fitted);
        // A call goes with its output: the API refuses either one alone.
        if let Some((call_id, _)) = input[at].tool_call()
            && let Some(&output_at) = outputs.get(call_id)
            && output_at < prompt_at
            && keep[output_at]
        {
            keep[output_at] = false;
            fitted.dropped_items += 1;
            shrink(output_at, 0, &mut fitted);
        }
    }
    if fitted.tokens > budget {
        return Err(format!(
            "cannot compact the conversation: even the summary request without old items takes about {} tokens, more than the {budget} the context window leaves for it",
            fitted.tokens
        ));
    }
    fitted.input = input
        .into_iter()
        .zip(keep)
        .filter_map(|(item, keep)| keep.then_some(item))
        .collect();
    // The API refuses an output whose call is not in the request.
    drop_orphan_outputs(&mut fitted.input);
    Ok(fitted)
}

/// Removes tool call outputs whose call is not in `items`.
fn drop_orphan_outputs(items: &mut Vec<ResponseItem>) {
    let calls: HashSet<String> = items
        .iter()
        .filter_map(|item| Some(item.tool_call()?.0.to_string()))
        .collect();
    items.retain(|item| item.answered_call_id().is_none_or(|id| calls.contains(id)));
}

/// Replaces the images `item` carries with a note; returns how many there were.
fn drop_images(item: &mut ResponseItem) -> usize {
    let mut dropped = 0;
    match item {
        ResponseItem::Message { content, .. } => {
            for part in content.iter_mut() {
                if let ContentItem::InputImage { .. } = part {
                    *part = ContentItem::InputText {
                        text: DROPPED_IMAGE.to_string(),
                    };
                    dropped += 1;
                }
            }
        }
        ResponseItem::FunctionCallOutput { output, .. }
        | ResponseItem::CustomToolCallOutput { output, .. } => {
            if let FunctionOutput::Content(parts) = output {
                for part in parts.iter_mut() {
                    if let OutputContentItem::InputImage { .. } = part {
                        *part = OutputContentItem::InputText {
                            text: DROPPED_IMAGE.to_string(),
                        };
                        dropped += 1;
                    }
                }
            }
        }
        ResponseItem::Reasoning { .. }
        | ResponseItem::FunctionCall { .. }
        | ResponseItem::CustomToolCall { .. }
        | ResponseItem::Other(_) => {}
    }
    dropped
}

fn is_user_message(item: &ResponseItem) -> bool {
    matches!(item, ResponseItem::Message { role, .. } if role == "user")
}

/// Whether `text` is the summary of an earlier compaction.
fn is_summary(text: &str) -> bool {
    text.starts_with(SUMMARY_PREFIX)
}

/// The text of the last assistant message among `items`.
fn last_assistant_text(items: &[ResponseItem]) -> String {
    items
        .iter()
        .rev()
        .find_map(|item| match item {
            ResponseItem::Message { role, .. } if role == "assistant" => item.message_text(),
            _ => None,
        })
        .unwrap_or_default()
}

/// The history after compaction: the initial context `history` starts with, the
/// user's messages (newest first within `user_budget` tokens, an oversized one cut in
/// the middle, then back in order), and the summary.
pub(crate) fn compacted_history(
    history: &[ResponseItem],
    summary_text: &str,
    user_budget: u64,
) -> Vec<ResponseItem> {
    let context_len = history
        .iter()
        .take_while(|item| instructions::is_initial_context(item))
        .count();
    let mut compacted: Vec<ResponseItem> = history[..context_len].to_vec();
    let messages: Vec<String> = history[context_len..]
        .iter()
        .filter(|item| is_user_message(item))
        .filter_map(ResponseItem::message_text)
        .filter(|text| !is_summary(text))
        .collect();
    let mut remaining = user_budget;
    let mut kept = Vec::new();
    for text in messages.into_iter().rev() {
        if remaining == 0 {
            break;
        }
        let tokens = tokens_for_bytes(text.len());
        if tokens <= remaining {
            remaining -= tokens;
            kept.push(text);
        } else {
            let max_bytes = usize::try_from(remaining)
                .unwrap_or(usize::MAX)
                .saturating_mul(context_window::BYTES_PER_TOKEN);
            kept.push(crate::exec::truncate_middle(&text, max_bytes).0);
            break;
        }
    }
    compacted.extend(kept.into_iter().rev().map(ResponseItem::user_text));
    compacted.push(ResponseItem::user_text(summary_text));
    compacted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> ResponseItem {
        ResponseItem::FunctionCall {
            id: None,
            name: "shell".into(),
            namespace: None,
            arguments: "{}".into(),
            call_id: id.into(),
        }
    }

    fn output(id: &str, text: &str) -> ResponseItem {
        ResponseItem::FunctionCallOutput {
            call_id: id.into(),
            output: text.into(),
        }
    }

    fn texts(items: &[ResponseItem]) -> Vec<String> {
        items
            .iter()
            .map(|item| match item {
                ResponseItem::FunctionCall { call_id, .. } => format!("call {call_id}"),
                ResponseItem::FunctionCallOutput { call_id, output } => {
                    let output = output.text();
                    format!("output {call_id}: {}", &output[..output.len().min(12)])
                }
                other => other.message_text().unwrap_or_default(),
            })
            .collect()
    }

    fn history() -> Vec<ResponseItem> {
        vec![
            ResponseItem::developer_text("env"),
            ResponseItem::user_text(
                "# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nrules\n</INSTRUCTIONS>",
            ),
            ResponseItem::user_text("first task"),
            call("c1"),
            output("c1", &"a".repeat(4000)),
            ResponseItem::assistant_text("done one"),
            ResponseItem::user_text("second task"),
            call("c2"),
            output("c2", &"b".repeat(4000)),
        ]
    }

    #[test]
    fn the_compacted_history_keeps_context_user_messages_and_the_summary() {
        let compacted = compacted_history(&history(), "SUMMARY", 1000);
        assert_eq!(
            texts(&compacted),
            [
                "env",
                "# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nrules\n</INSTRUCTIONS>",
                "first task",
                "second task",
                "SUMMARY"
            ]
        );
    }

    #[test]
    fn an_earlier_summary_is_not_kept_as_a_user_message() {
        let mut history = history();
        history.push(ResponseItem::user_text(format!(
            "{SUMMARY_PREFIX}\nold summary"
        )));
        let compacted = compacted_history(&history, "NEW", 1000);
        assert_eq!(texts(&compacted).last().map(String::as_str), Some("NEW"));
        assert_eq!(compacted.len(), 5);
    }

    #[test]
    fn user_messages_are_kept_newest_first_within_the_budget() {
        let mut history = history();
        history.push(ResponseItem::user_text("x".repeat(400)));
        // 100 tokens for the newest, 2 left: "second task" (3 tokens) is cut, "first task" goes.
        let compacted = compacted_history(&history, "S", 102);
        let texts = texts(&compacted);
        assert_eq!(texts.len(), 5, "{texts:?}");
        assert!(texts[2].contains("truncated"), "{texts:?}");
        assert_eq!(texts[3], "x".repeat(400));
    }

    #[test]
    fn a_request_that_fits_is_sent_whole() {
        let fitted = fit_summary_request(&history(), "summarize", "sys", Some(100_000)).unwrap();
        assert_eq!(fitted.input.len(), history().len() + 1);
        assert_eq!((fitted.dropped_outputs, fitted.dropped_items), (0, 0));
    }

    #[test]
    fn the_oldest_tool_outputs_go_first() {
        // Both outputs are ~2000 tokens; dropping the older one is enough.
        let fitted = fit_summary_request(&history(), "summarize", "sys", Some(1500)).unwrap();
        assert_eq!(fitted.dropped_outputs, 1);
        assert_eq!(fitted.dropped_items, 0);
        let texts = texts(&fitted.input);
        assert!(texts.contains(&format!("output c1: {}", &DROPPED_OUTPUT[..12])));
        assert!(texts.contains(&"output c2: bbbbbbbbbbbb".to_string()));
        assert!(fitted.tokens <= 1500);
    }

    #[test]
    fn images_go_before_anything_else() {
        let image_url = format!("data:image/png;base64,{}", "A".repeat(100_000));
        let mut history = history();
        history.insert(
            2,
            ResponseItem::Message {
                id: None,
                role: "user".into(),
                content: vec![
                    ContentItem::InputText {
                        text: "what is this?".into(),
                    },
                    ContentItem::InputImage {
                        image_url: image_url.clone(),
                    },
                ],
            },
        );
        history.push(call("c3"));
        history.push(ResponseItem::FunctionCallOutput {
            call_id: "c3".into(),
            output: FunctionOutput::Content(vec![OutputContentItem::InputImage { image_url }]),
        });
        // The texts take ~2,100 tokens, each image 1,000: dropping both images fits 2,500.
        let fitted = fit_summary_request(&history, "summarize", "sys", Some(2_500)).unwrap();
        assert_eq!(
            (
                fitted.dropped_images,
                fitted.dropped_outputs,
                fitted.dropped_items
            ),
            (2, 0, 0)
        );
        let images = fitted
            .input
            .iter()
            .flat_map(context_window::image_urls)
            .count();
        assert_eq!(images, 0);
        assert!(texts(&fitted.input).contains(&format!("what is this?{DROPPED_IMAGE}")));
    }

    #[test]
    fn then_the_oldest_items_but_never_the_context_or_the_task() {
        let fitted = fit_summary_request(&history(), "summarize", "sys", Some(120)).unwrap();
        let texts = texts(&fitted.input);
        assert_eq!(texts[0], "env");
        assert!(texts[1].starts_with("# AGENTS.md"));
        assert!(texts.contains(&"second task".to_string()), "{texts:?}");
        assert_eq!(texts.last().map(String::as_str), Some("summarize"));
        assert!(!texts.contains(&"first task".to_string()), "{texts:?}");
        // No output without its call.
        assert!(
            !texts.iter().any(|t| t.starts_with("output c1")),
            "{texts:?}"
        );
        assert!(fitted.tokens <= 120);
    }

    #[test]
    fn a_request_that_cannot_fit_is_an_error() {
        let err = fit_summary_request(&history(), "summarize", "sys", Some(5)).unwrap_err();
        assert!(err.contains("cannot compact"), "{err}");
    }

    #[test]
    fn the_budget_leaves_room_for_the_summary() {
        assert_eq!(summary_budget(Some(100_000), Some(10)), Some(95_000));
        assert_eq!(summary_budget(None, Some(10)), Some(10));
        assert_eq!(summary_budget(None, None), None);
    }
}
