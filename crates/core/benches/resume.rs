//! How long resuming a long session takes: a 10,000-record rollout of realistic
//! turns (messages, reasoning, tool calls with outputs of a few KiB, events) is
//! written once, then loaded repeatedly — first the file alone (`load_rollout`:
//! read, parse, rebuild the history), then a whole `ThreadManager::resume_thread`
//! (lock, load, configuration, a live thread). Prints min/median/max.
//!
//! Run with `cargo bench -p deputy-core --bench resume`.

use std::time::{Duration, Instant};

use deputy_core::ThreadManager;
use deputy_core::config::ConfigLayers;
use deputy_core::rollout::{RolloutRecorder, SessionMeta, load_rollout};
use deputy_protocol::{
    AgentMessageEvent, EventMsg, ReasoningSummary, ResponseItem, TaskCompleteEvent,
    TaskStartedEvent, TokenCountEvent, TokenUsage, TokenUsageInfo, UserMessageEvent,
};

const RECORDS: usize = 10_000;
const ITERATIONS: usize = 30;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run());
}

async fn run() {
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

    let (id, path, history_len) = write_session(&layers).await;
    let bytes = std::fs::metadata(&path).expect("stat").len();
    println!(
        "rollout: {RECORDS} records, {:.1} MiB, {history_len} history items",
        bytes as f64 / (1024.0 * 1024.0)
    );

    let mut load = Vec::new();
    for _ in 0..ITERATIONS {
        let start = Instant::now();
        let session = load_rollout(&path).expect("load");
        load.push(start.elapsed());
        assert_eq!(session.history.len(), history_len);
    }
    report("load_rollout + history", &mut load);

    let mut resume = Vec::new();
    for _ in 0..ITERATIONS {
        let manager = ThreadManager::new(None);
        let start = Instant::now();
        let (_, configured) = manager.resume_thread(&id, &layers).expect("resume");
        resume.push(start.elapsed());
        assert_eq!(configured.history_entry_count, history_len);
        manager.shutdown_all().await;
    }
    report("ThreadManager::resume_thread", &mut resume);
}

fn report(what: &str, samples: &mut [Duration]) {
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

/// Writes a session of whole turns until it holds [`RECORDS`] records.
async fn write_session(layers: &ConfigLayers) -> (String, std::path::PathBuf, usize) {
    let config = layers.load().expect("config");
    let id = uuid::Uuid::now_v7().to_string();
    let meta = SessionMeta::new(&id, &config, Default::default());
    let env = ResponseItem::developer_text(filler(600));
    let recorder = RolloutRecorder::create(&config.deputy_home, &meta, &[env]).expect("create");
    let mut rng = fastrand::Rng::with_seed(7);
    let mut records = 2;
    let mut history = 1;
    let mut turn = 0;
    let mut usage = TokenUsage::default();
    while records < RECORDS {
        turn += 1;
        let prompt = filler(rng.usize(40..400));
        let event = |msg: EventMsg| recorder.record_event(&msg);
        recorder.record_turn_context(deputy_core::rollout::TurnContextRecord::new(
            &turn.to_string(),
            &config,
        ));
        event(EventMsg::TaskStarted(TaskStartedEvent {
            turn_id: turn.to_string(),
            model_context_window: Some(272_000),
        }));
        event(EventMsg::UserMessage(UserMessageEvent {
            message: prompt.clone(),
        }));
        recorder.record_items([&ResponseItem::user_text(prompt)]);
        records += 4;
        history += 1;
        for call in 0..rng.usize(1..6) {
            let reasoning = ResponseItem::Reasoning {
                id: format!("rs_{turn}_{call}"),
                summary: vec![ReasoningSummary::SummaryText {
                    text: filler(rng.usize(100..400)),
                }],
                encrypted_content: Some(filler(rng.usize(500..1500))),
            };
            let call_id = format!("call_{turn}_{call}");
            let function_call = ResponseItem::FunctionCall {
                id: None,
                name: "shell".into(),
                arguments: format!(
                    r#"{{"command":["bash","-lc","rg -n {} src/"]}}"#,
                    filler(rng.usize(10..80))
                ),
                call_id: call_id.clone(),
            };
            let output = ResponseItem::FunctionCallOutput {
                call_id,
                output: format!(
                    "Exit code: 0\nWall time: 0.2 seconds\nOutput:\n{}",
                    filler(rng.usize(200..4000))
                ),
            };
            recorder.record_items([&reasoning, &function_call, &output]);
            usage.add(&TokenUsage {
                input_tokens: 5000,
                output_tokens: 300,
                total_tokens: 5300,
                ..TokenUsage::default()
            });
            event(token_count(usage));
            records += 4;
            history += 3;
        }
        let answer = filler(rng.usize(100..800));
        recorder.record_items([&ResponseItem::assistant_text(answer.clone())]);
        event(EventMsg::AgentMessage(AgentMessageEvent {
            message: answer.clone(),
        }));
        event(token_count(usage));
        event(EventMsg::TaskComplete(TaskCompleteEvent {
            turn_id: turn.to_string(),
            last_agent_message: Some(answer),
        }));
        records += 4;
        history += 1;
    }
    let path = recorder.path().to_path_buf();
    recorder.close().await.expect("close");
    (id, path, history)
}

fn token_count(total: TokenUsage) -> EventMsg {
    EventMsg::TokenCount(TokenCountEvent {
        info: Some(TokenUsageInfo {
            total_token_usage: total,
            last_token_usage: total,
            model_context_window: Some(272_000),
        }),
        rate_limits: None,
    })
}

/// `len` bytes of word-like text with some lines, quotes and non-ASCII, as JSON must escape them.
fn filler(len: usize) -> String {
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
