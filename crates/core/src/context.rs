//! The state a thread's turns share ([`Session`]) and what one turn's work sees
//! ([`TurnContext`]): the types every part of a turn — the turn loop, its tools,
//! compaction, reviews — is written against. A leaf of the engine's module graph: it
//! depends on the log, the rollout, the configuration and the model client, and
//! nothing that runs turns depends on anything above it.

// Runs on the async runtime: no blocking std calls (see clippy.toml).
#![cfg_attr(not(test), warn(clippy::disallowed_methods))]

use std::any::{Any, TypeId};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use deputy_protocol::{
    ApprovalDecision, ApprovalResolvedEvent, CommandExecutionStatus, ContextCompactionStatus,
    FileChangeItem, FunctionOutput, ItemEvent, PatchApplyStatus, PlanUpdateItem, Question,
    QuestionAsked, Reply, ResponseItem, ThreadEventMsg, ThreadItem, TokenUsage, ToolCallKind,
    TurnOverrides, UpdatePlanArgs, WarningEvent,
};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::approval::ApprovalGate;
use crate::client::{ModelClient, ModelError};
use crate::config::Config;
use crate::context_window::UsageMark;
use crate::event_log::EventLog;
use crate::rollout::{CompactedRecord, RolloutRecorder, TurnContextRecord};
use crate::sync::lock;
use crate::turn_diff::TurnDiffTracker;

/// What a turn starts from: the configuration and its model client. A turn's
/// overrides replace them for itself and every later turn.
#[derive(Debug, Clone)]
pub(crate) struct TurnSettings {
    pub(crate) config: Arc<Config>,
    pub(crate) client: ModelClient,
}

/// The state a thread's turns share.
pub(crate) struct Session {
    pub(crate) settings: Arc<Mutex<TurnSettings>>,
    pub(crate) log: Arc<EventLog>,
    pub(crate) history: Mutex<Vec<ResponseItem>>,
    pub(crate) approvals: ApprovalGate,
    pub(crate) total_usage: Mutex<TokenUsage>,
    /// The provider's last usage report and the history length it covers: the base
    /// from which the next request's size is estimated (`None`: estimate it whole).
    pub(crate) usage_mark: Mutex<Option<UsageMark>>,
    /// Where the thread is persisted, when it is.
    pub(crate) rollout: Option<RolloutRecorder>,
    /// What the thread's tools keep between calls; dropped with the session.
    pub(crate) tool_state: ToolState,
    /// Why the thread's turns cannot run: a required MCP server did not start.
    pub(crate) unusable: Mutex<Option<String>>,
}

impl Session {
    /// A snapshot of the history, for the next model request.
    pub(crate) fn history_snapshot(&self) -> Vec<ResponseItem> {
        lock(&self.history).clone()
    }

    /// Appends items to the history and queues them for the rollout.
    pub(crate) fn record(&self, items: impl IntoIterator<Item = ResponseItem>) {
        let mut history = lock(&self.history);
        let start = history.len();
        history.extend(items);
        if let Some(rollout) = &self.rollout {
            rollout.record_items(&history[start..]);
        }
    }

    /// Records `output` as the answer to call `call_id`, in the form its call needs (a
    /// function call's output, or a freeform tool call's).
    pub(crate) fn record_call_output(&self, call_id: String, output: FunctionOutput) {
        let kind = lock(&self.history)
            .iter()
            .rev()
            .find_map(|item| item.tool_call().filter(|(id, _)| *id == call_id))
            .map_or(ToolCallKind::Function, |(_, kind)| kind);
        self.record([kind.output(call_id, output)]);
    }

    /// Replaces the whole history with a compacted one ending in `summary`, and
    /// records that in the rollout so a resumed thread loads the compacted history.
    pub(crate) fn replace_history(&self, items: Vec<ResponseItem>, summary: String) {
        let mut history = lock(&self.history);
        if let Some(rollout) = &self.rollout {
            rollout.record_compacted(CompactedRecord {
                message: summary,
                replacement_history: items.clone(),
            });
        }
        *history = items;
        drop(history);
        // The last report was about the old history; the next estimate starts afresh.
        *lock(&self.usage_mark) = None;
    }

    /// Notes the last response's usage report (`None`: it had none) for the history as
    /// it now stands.
    pub(crate) fn mark_usage(&self, usage: Option<&TokenUsage>) {
        let len = lock(&self.history).len();
        *lock(&self.usage_mark) = usage.and_then(|usage| UsageMark::from_usage(usage, len));
    }

    /// Queues the settings turn `turn_id` starts with for the rollout.
    pub(crate) fn record_turn_context(&self, turn_id: &str, config: &Config) {
        if let Some(rollout) = &self.rollout {
            rollout.record_turn_context(TurnContextRecord::new(turn_id, config));
        }
    }

    /// The settings a new turn starts with, after applying its overrides (kept for
    /// later turns); `Err` says why the overrides cannot apply.
    pub(crate) fn settings_for_turn(
        &self,
        overrides: Option<&TurnOverrides>,
    ) -> Result<TurnSettings, String> {
        let mut settings = lock(&self.settings);
        if let Some(overrides) = overrides {
            let config = settings
                .config
                .with_overrides(overrides)
                .map_err(|e| e.to_string())?;
            let client = if config.model == settings.config.model {
                settings.client.clone()
            } else {
                ModelClient::new(config.model_provider.clone(), config.model.clone())
                    .map_err(|e| e.to_string())?
            };
            *settings = TurnSettings {
                config: Arc::new(config),
                client,
            };
        }
        Ok(settings.clone())
    }

    /// Waits until the rollout's queued records reach the kernel, so a killed
    /// process keeps them. `Err` says why they could not be written (path and cause): the
    /// turn must fail rather than go on as if they were saved.
    pub(crate) async fn flush_rollout(&self) -> Result<(), String> {
        match &self.rollout {
            Some(rollout) => rollout.flush().await.map_err(|e| e.to_string()),
            None => Ok(()),
        }
    }

    /// When an earlier write of the rollout failed: brings the thread back to what the
    /// file holds (the history as saved, with calls left unanswered closed) so that the
    /// rollout is written again, and says what was lost. `Ok(None)` when nothing failed;
    /// `Err` when the file cannot be read back.
    pub(crate) async fn recover_rollout(&self) -> Result<Option<String>, String> {
        let Some(rollout) = &self.rollout else {
            return Ok(None);
        };
        let Some(failure) = rollout.failure() else {
            return Ok(None);
        };
        let saved = rollout
            .recover()
            .await
            .map_err(|e| format!("{failure}; reading it back failed too: {e}"))?;
        let mut history = lock(&self.history);
        let kept = history
            .iter()
            .zip(&saved.history)
            .take_while(|(a, b)| a == b)
            .count();
        let lost: Vec<String> = history[kept..]
            .iter()
            .filter(|item| matches!(item, ResponseItem::Message { role, .. } if role == "user"))
            .filter_map(ResponseItem::message_text)
            .map(|text| format!("\"{}\"", crate::rollout::one_line_preview(&text)))
            .collect();
        let dropped = history.len() - kept;
        *history = saved.history;
        drop(history);
        *lock(&self.usage_mark) = None;
        rollout.record_items(&saved.closed_calls);
        let prompts = if lost.is_empty() {
            String::new()
        } else {
            format!(" (the turns of {})", lost.join(", "))
        };
        Ok(Some(format!(
            "{failure}. The conversation continues from what was saved: {dropped} history \
             items after it were lost{prompts} and the model no longer sees them."
        )))
    }

    /// Syncs and closes the rollout, so the thread can be resumed elsewhere at once.
    pub(crate) async fn close_rollout(&self) {
        if let Some(rollout) = &self.rollout {
            let _ = rollout.close().await;
        }
    }

    /// Adds a model response's usage and returns the new total.
    pub(crate) fn add_usage(&self, usage: &TokenUsage) -> TokenUsage {
        let mut total = lock(&self.total_usage);
        total.add(usage);
        *total
    }
}

/// How a turn ended early.
#[derive(Debug)]
pub(crate) enum TurnStop {
    /// The user answered an approval with `abort`.
    Aborted,
    /// The model call failed for good.
    Model(ModelError),
    /// The history could not be compacted (or still does not fit after compacting).
    Compaction(String),
    /// The user's input cannot be sent (an image that cannot be read).
    Input(String),
    /// The rollout could not be written (the message names the file and the cause).
    Rollout(String),
}

/// What one turn's tool handlers need.
pub(crate) struct TurnContext {
    pub(crate) session: Arc<Session>,
    /// The settings this turn runs with (its overrides applied).
    pub(crate) config: Arc<Config>,
    pub(crate) client: ModelClient,
    pub(crate) sub_id: String,
    pub(crate) turn_id: String,
    pub(crate) cancel: CancellationToken,
    pub(crate) diff: Mutex<TurnDiffTracker>,
    /// The JSON Schema the turn's final message must follow, if the turn was given one.
    pub(crate) output_schema: Option<serde_json::Value>,
    /// Command and file change items started but not completed, by id: closed if the turn stops.
    pub(crate) open_items: Mutex<BTreeMap<String, ThreadItem>>,
    /// The turn's plan item, once the model made a plan.
    pub(crate) plan: Mutex<Option<PlanUpdateItem>>,
    /// The patch being written, if any: a stopped turn waits for it.
    pub(crate) patch_in_flight: Mutex<Option<PatchInFlight>>,
}

/// A new item id (a UUIDv7: unique across threads and restarts).
pub(crate) fn new_item_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

impl TurnContext {
    /// Publishes an event of this turn.
    pub(crate) fn emit(&self, msg: ThreadEventMsg) {
        self.session
            .log
            .publish(Some(&self.turn_id), &self.sub_id, msg);
    }

    /// Reports a new item.
    pub(crate) fn item_started(&self, item: ThreadItem) {
        self.track(&item, false);
        self.emit(ThreadEventMsg::ItemStarted(ItemEvent { item }));
    }

    /// Reports an item's new state.
    pub(crate) fn item_updated(&self, item: ThreadItem) {
        self.track(&item, false);
        self.emit(ThreadEventMsg::ItemUpdated(ItemEvent { item }));
    }

    /// Reports an item's final state.
    pub(crate) fn item_completed(&self, item: ThreadItem) {
        self.track(&item, true);
        self.emit(ThreadEventMsg::ItemCompleted(ItemEvent { item }));
    }

    fn track(&self, item: &ThreadItem, done: bool) {
        if matches!(
            item,
            ThreadItem::CommandExecution(_)
                | ThreadItem::FileChange(_)
                | ThreadItem::ContextCompaction(_)
                | ThreadItem::McpToolCall(_)
        ) {
            let mut open = lock(&self.open_items);
            if done {
                open.remove(item.id());
            } else {
                open.insert(item.id().to_string(), item.clone());
            }
        }
    }

    /// Asks the user `question` about item `item_id` and waits for the reply: the
    /// question is published, the reply awaited (never, once the turn is cancelled: the
    /// turn's owner ends it), and the answer published. A refusal made for the user (a
    /// timeout, a client that cannot ask) is also told as a warning naming its reason.
    pub(crate) async fn ask(&self, item_id: &str, question: Question) -> Reply {
        let call_id = question.call_id().to_string();
        let subject = question.subject();
        let pending = self.session.approvals.register(&call_id);
        self.emit(ThreadEventMsg::QuestionAsked(Box::new(QuestionAsked {
            item_id: item_id.to_string(),
            question,
        })));
        let reply = pending.wait(&self.cancel).await;
        self.emit(ThreadEventMsg::ApprovalResolved(ApprovalResolvedEvent {
            item_id: item_id.to_string(),
            call_id,
            decision: reply.decision(),
        }));
        if let Reply::Decision {
            decision: ApprovalDecision::Denied | ApprovalDecision::TimedOut,
            reason: Some(reason),
        } = &reply
        {
            self.emit(ThreadEventMsg::Warning(WarningEvent {
                message: format!("{subject} not approved: {reason}"),
            }));
        }
        reply
    }

    /// Records the model's new plan: the turn's plan item starts with the first, later ones update it.
    pub(crate) fn update_plan(&self, args: UpdatePlanArgs) {
        let mut plan = lock(&self.plan);
        let started = plan.is_some();
        let item = PlanUpdateItem {
            id: plan
                .as_ref()
                .map_or_else(new_item_id, |item| item.id.clone()),
            explanation: args.explanation,
            plan: args.plan,
        };
        *plan = Some(item.clone());
        drop(plan);
        if started {
            self.emit(ThreadEventMsg::ItemUpdated(ItemEvent {
                item: ThreadItem::Plan(Box::new(item)),
            }));
        } else {
            self.emit(ThreadEventMsg::ItemStarted(ItemEvent {
                item: ThreadItem::Plan(Box::new(item)),
            }));
        }
    }

    /// Completes what the turn leaves open: the plan, and commands, patches or a
    /// compaction that a stop or a failure cut short.
    pub(crate) fn close_items(&self) {
        if let Some(plan) = lock(&self.plan).take() {
            self.emit(ThreadEventMsg::ItemCompleted(ItemEvent {
                item: ThreadItem::Plan(Box::new(plan)),
            }));
        }
        let open = std::mem::take(&mut *lock(&self.open_items));
        for (_, item) in open {
            let item = match item {
                ThreadItem::CommandExecution(mut cmd) => {
                    cmd.status = CommandExecutionStatus::Failed;
                    cmd.exit_code = cmd.started.then_some(-1);
                    cmd.formatted_output = "aborted: the turn was stopped".into();
                    ThreadItem::CommandExecution(cmd)
                }
                ThreadItem::FileChange(mut patch) => {
                    patch.status = PatchApplyStatus::Failed;
                    patch.stderr = "aborted: the turn was stopped".into();
                    ThreadItem::FileChange(patch)
                }
                ThreadItem::ContextCompaction(mut compaction) => {
                    compaction.status = ContextCompactionStatus::Failed;
                    ThreadItem::ContextCompaction(compaction)
                }
                ThreadItem::McpToolCall(mut call) => {
                    call.status = deputy_protocol::McpToolCallStatus::Failed;
                    call.error = Some("aborted: the turn was stopped".into());
                    ThreadItem::McpToolCall(call)
                }
                other => other,
            };
            self.emit(ThreadEventMsg::ItemCompleted(ItemEvent { item }));
        }
    }
}

/// A patch being written while its turn runs.
pub(crate) struct PatchInFlight {
    pub(crate) item: FileChangeItem,
    pub(crate) call_id: String,
    pub(crate) written: watch::Receiver<Option<Result<String, String>>>,
}

/// State the thread's tools keep between calls, one value per type, created on first use
/// and dropped with the thread.
#[derive(Default)]
pub(crate) struct ToolState {
    slots: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl ToolState {
    /// The thread's `T`, created with `T::default()` the first time it is asked for.
    pub(crate) fn get<T: Any + Send + Sync + Default>(&self) -> Arc<T> {
        let mut slots = lock(&self.slots);
        let slot = slots
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Arc::new(T::default()));
        match slot.clone().downcast::<T>() {
            Ok(state) => state,
            // The slot of `T`'s type id only ever holds a `T`; were it not so, start afresh.
            Err(_) => {
                let state = Arc::new(T::default());
                *slot = state.clone();
                state
            }
        }
    }
}
