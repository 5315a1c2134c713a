//! A realistic session written straight to a rollout, shared by the benches that load
//! or replay one: turns of user messages, reasoning, commands with outputs of a few KiB,
//! agent messages and token counts, with their item events, as the engine records them.

#![allow(dead_code, reason = "each bench uses part of it")]

use std::path::PathBuf;
use std::time::Duration;

use tempfile::TempDir;

use deputy_core::config::ConfigLayers;
use deputy_core::rollout::{RolloutRecorder, SessionMeta};
use deputy_protocol::{
    AgentMessageItem, CommandExecutionItem, CommandExecutionStatus, ItemEvent, ReasoningItem,
    ReasoningSummary, ResponseItem, TaskCompleteEvent, TaskStartedEvent, ThreadEvent,
    ThreadEventMsg, ThreadItem, TokenCountEvent, TokenUsage, TokenUsageInfo, UserMessageItem,
};

/// A temporary `DEPUTY_HOME` whose config names an unreachable local model, and a
/// temporary working directory; both are removed when it is dropped.
pub struct BenchHome {
    _home: TempDir,
    _work: TempDir,
    /// The configuration layers to load or resume threads with.
    pub layers: ConfigLayers,
}

impl BenchHome {
    /// Creates both directories and the config file.
    pub fn new() -> Self {
        let home = tempfile::tempdir().expect("tempdir");
        let work = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            home.path().join("config.toml"),
            "model = \"bench\"\nmodel_provider = \"local\"\n\
             [model_providers.local]\nname = \"Local\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
        )
        .expect("config");
        let mut layers = ConfigLayers::new(home.path().to_path_buf());
        layers.overrides.cwd = Some(work.path().to_path_buf());
        Self {
            _home: home,
            _work: work,
            layers,
        }
    }
}

/// Runs `future` to completion on a two-worker runtime, like the engine's.
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(future)
}

/// Prints `what` with the min, median and max of `samples`.
pub fn report(what: &str, samples: &mut [Duration]) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{what}: min {:.1} ms, median {:.1} ms, max {:.1} ms ({} runs)",
        ms(samples[0]),
        ms(samples[samples.len() / 2]),
        ms(samples[samples.len() - 1]),
        samples.len()
    );
}

/// When [`write_session`] stops: after the turn that reaches this many.
#[derive(Debug, Clone, Copy)]
pub enum Until {
    /// Rollout records (lines): history items, events and turn contexts together.
    Records(usize),
    /// Events (each with its seq).
    Events(u64),
}

impl Until {
    fn reached(self, records: usize, events: u64) -> bool {
        match self {
            Until::Records(n) => records >= n,
            Until::Events(n) => events >= n,
        }
    }
}

/// The session [`write_session`] wrote.
#[derive(Debug)]
pub struct Written {
    /// Its thread id.
    pub id: String,
    /// Its rollout file, closed.
    pub path: PathBuf,
    /// How many history items it holds.
    pub history: usize,
    /// How many events it holds (the last seq).
    pub events: u64,
}

/// Writes a session of whole turns, as the engine records them (history items and
/// every non-delta event), until `until` says it is long enough.
pub async fn write_session(layers: &ConfigLayers, until: Until) -> Written {
    let config = layers.load().expect("config");
    let id = uuid::Uuid::now_v7().to_string();
    let meta = SessionMeta::new(&id, &config, Default::default());
    let env = ResponseItem::developer_text(filler(600));
    let recorder = RolloutRecorder::create(&config.deputy_home, &meta, &[env]).expect("create");
    let mut rng = fastrand::Rng::with_seed(7);
    let mut records = 2;
    let mut history = 1;
    let mut turn = 0;
    let mut seq = 0;
    let mut usage = TokenUsage::default();
    while !until.reached(records, seq) {
        turn += 1;
        let turn_id = uuid::Uuid::now_v7().to_string();
        let mut event = |msg: ThreadEventMsg| {
            seq += 1;
            recorder.record_event(&ThreadEvent {
                seq,
                thread_id: id.as_str().into(),
                turn_id: Some(turn_id.as_str().into()),
                submission_id: turn.to_string().into(),
                msg,
            });
        };
        let item = |item: ThreadItem| ItemEvent { item };
        let prompt = filler(rng.usize(40..400));
        recorder.record_turn_context(deputy_core::rollout::TurnContextRecord::new(
            &turn_id, &config,
        ));
        event(ThreadEventMsg::TurnStarted(TaskStartedEvent {
            turn_id: turn_id.clone(),
            started_at: Some(1_790_000_000),
            model_context_window: Some(272_000),
        }));
        let user = ThreadItem::UserMessage(UserMessageItem {
            id: uuid::Uuid::now_v7().to_string(),
            text: prompt.clone(),
        });
        event(ThreadEventMsg::ItemStarted(item(user.clone())));
        event(ThreadEventMsg::ItemCompleted(item(user)));
        recorder.record_items([&ResponseItem::user_text(prompt)]);
        records += 5;
        history += 1;
        for call in 0..rng.usize(1..6) {
            let summary = filler(rng.usize(100..400));
            let reasoning = ResponseItem::Reasoning {
                id: format!("rs_{turn}_{call}"),
                summary: vec![ReasoningSummary::SummaryText {
                    text: summary.clone(),
                }],
                content: None,
                encrypted_content: Some(filler(rng.usize(500..1500))),
            };
            let call_id = format!("call_{turn}_{call}");
            let argv = vec![
                "bash".to_string(),
                "-lc".to_string(),
                format!("rg -n {} src/", filler(rng.usize(10..80))),
            ];
            let function_call = ResponseItem::FunctionCall {
                id: None,
                name: "shell".into(),
                namespace: None,
                arguments: serde_json::json!({ "command": argv }).to_string(),
                call_id: call_id.clone(),
            };
            let printed = filler(rng.usize(200..4000));
            let formatted = format!("Exit code: 0\nWall time: 0.2 seconds\nOutput:\n{printed}");
            let output = ResponseItem::FunctionCallOutput {
                call_id: call_id.clone(),
                output: formatted.clone().into(),
            };
            // Streamed items start empty, as the engine starts them; their deltas are
            // never written to the rollout.
            let reasoning_id = uuid::Uuid::now_v7().to_string();
            event(ThreadEventMsg::ItemStarted(item(ThreadItem::Reasoning(
                ReasoningItem {
                    id: reasoning_id.clone(),
                    text: String::new(),
                },
            ))));
            event(ThreadEventMsg::ItemCompleted(item(ThreadItem::Reasoning(
                ReasoningItem {
                    id: reasoning_id,
                    text: summary,
                },
            ))));
            let mut command = CommandExecutionItem::asked(
                uuid::Uuid::now_v7().to_string(),
                call_id,
                argv,
                config.cwd.clone(),
                Vec::new(),
            );
            event(ThreadEventMsg::ItemStarted(item(
                ThreadItem::CommandExecution(Box::new(command.clone())),
            )));
            command.started = true;
            event(ThreadEventMsg::ItemUpdated(item(
                ThreadItem::CommandExecution(Box::new(command.clone())),
            )));
            command.status = CommandExecutionStatus::Completed;
            command.exit_code = Some(0);
            command.stdout = printed.clone();
            command.aggregated_output = printed;
            command.duration = Some(Duration::from_millis(200));
            command.formatted_output = formatted;
            event(ThreadEventMsg::ItemCompleted(item(
                ThreadItem::CommandExecution(Box::new(command)),
            )));
            recorder.record_items([&reasoning, &function_call, &output]);
            usage.add(&TokenUsage {
                input_tokens: 5000,
                output_tokens: 300,
                total_tokens: 5300,
                ..TokenUsage::default()
            });
            event(token_count(usage));
            records += 9;
            history += 3;
        }
        let answer = filler(rng.usize(100..800));
        recorder.record_items([&ResponseItem::assistant_text(answer.clone())]);
        let message_id = uuid::Uuid::now_v7().to_string();
        event(ThreadEventMsg::ItemStarted(item(ThreadItem::AgentMessage(
            AgentMessageItem {
                id: message_id.clone(),
                text: String::new(),
            },
        ))));
        event(ThreadEventMsg::ItemCompleted(item(
            ThreadItem::AgentMessage(AgentMessageItem {
                id: message_id,
                text: answer.clone(),
            }),
        )));
        event(token_count(usage));
        event(ThreadEventMsg::TurnComplete(TaskCompleteEvent {
            turn_id: turn_id.clone(),
            last_agent_message: Some(answer),
            completed_at: Some(1_790_000_020),
            duration_ms: Some(20_000),
        }));
        records += 5;
        history += 1;
    }
    let path = recorder.path().to_path_buf();
    recorder.close().await.expect("close");
    Written {
        id,
        path,
        history,
        events: seq,
    }
}

fn token_count(total: TokenUsage) -> ThreadEventMsg {
    ThreadEventMsg::TokenCount(Box::new(TokenCountEvent {
        info: Some(TokenUsageInfo {
            total_token_usage: total,
            last_token_usage: total,
            model_context_window: Some(272_000),
        }),
        rate_limits: None,
    }))
}

/// `len` bytes of word-like text with some lines, quotes and non-ASCII, as JSON must escape them.
pub fn filler(len: usize) -> String {
    const WORDS: [&str; 8] = [
        "fn",
        "let",
        "\"path\"",
        "résumé",
        "src/lib.rs:42:",
        "{ok}",
        "tab\there",
        "end\n",
    ];
    let mut text = String::with_capacity(len + 16);
    let mut n = len;
    while text.len() < len {
        text.push_str(WORDS[n % WORDS.len()]);
        text.push(' ');
        n = n.wrapping_mul(31).wrapping_add(7);
    }
    text
}
