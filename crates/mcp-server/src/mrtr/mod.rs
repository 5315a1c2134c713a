//! Turns for clients of the 2026-07-28 protocol, which forbids server-to-client
//! requests: a question is the call's result (`InputRequiredResult`: the question as an
//! elicitation input request, and a sealed `requestState`), and the client's retry with
//! `inputResponses` continues the paused turn.
//!
//! A turn runs in a task of its own, driven by the engine's driver, so that it outlives
//! the request that started it. Whichever request is *attached* to it — the first call,
//! then each retry — follows the thread's event log from where the previous one stopped
//! (a cursor into the log, so nothing is sent twice and nothing is lost between round
//! trips), forwards the turn's events as `codex/event` in its own response, and returns
//! with the turn's result or with the next questions. Between round trips the call is
//! *paused*: its questions wait under the driver's approval timeout, and a retry that
//! never comes is a declined approval. Paused calls are per instance (see
//! ARCHITECTURE.md, "Scale-out").

mod approver;
mod state;
mod stream;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use deputy_core::driver::{TurnObserver, TurnOutcome, TurnRequest, drive_turn};
use deputy_core::{Thread, TurnInput};
use deputy_protocol::{InputItem, ThreadEvent, ThreadEventMsg, codex_events};
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResponse, CallToolResult, InputRequiredResult, InputResponses};
use tokio::sync::{OnceCell, mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::progress::ProgressReporter;
use crate::tool_catalogue::CONVERSATION_STREAM_TOOL;
use crate::turn_runner::{CallContext, outcome_result};
use approver::{Asked, MrtrApprover, answer_from_reply, input_request};
use state::{State, StateCodec, StateError};

/// How long a paused call, and its `requestState`, outlives its approval timeout: a
/// retry arriving a little late still finds the turn's result.
const LINGER: Duration = Duration::from_secs(120);

/// The paused calls of one server (all its connections), and the key of their states.
pub(crate) struct Mrtr {
    /// This instance, as states name it.
    instance: String,
    home: PathBuf,
    codec: OnceCell<Result<StateCodec, String>>,
    paused: Mutex<HashMap<String, Arc<Paused>>>,
    /// Conversation streams paused between round trips.
    streams: Mutex<HashMap<String, Arc<stream::PausedStream>>>,
}

impl std::fmt::Debug for Mrtr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mrtr")
            .field("instance", &self.instance)
            .finish_non_exhaustive()
    }
}

/// What a call needs to run its turn with round trips.
#[derive(Debug, Clone)]
pub(crate) struct MrtrCall {
    pub(crate) mrtr: Arc<Mrtr>,
    /// The tool called: states are bound to it.
    pub(crate) tool: String,
    /// Whether the client declared the elicitation capability in this request.
    pub(crate) can_elicit: bool,
}

/// A turn that outlives its requests.
struct Paused {
    id: String,
    thread: Arc<Thread>,
    /// The first request's id as Codex writes it: the turn's submission id.
    submission_id: String,
    /// Interrupts the turn.
    interrupt: CancellationToken,
    /// The turn's result, once the driver returned.
    done: watch::Receiver<Option<CallToolResult>>,
    /// Held by the attached request; free while the call is paused.
    attached: tokio::sync::Mutex<Detached>,
    /// How long the call waits for a retry.
    ttl: Duration,
}

/// The part of a paused call its attached request works on.
struct Detached {
    questions: mpsc::Receiver<Asked>,
    /// The last event of the log already sent (or skipped as not this turn's).
    cursor: u64,
    /// Questions handed out and not answered yet, by input-request key.
    waiting: BTreeMap<String, Asked>,
    /// Tool calls whose approval request event was already sent.
    announced: HashSet<String>,
    /// Whether the turn's end was sent.
    ended: bool,
    next_key: u32,
}

impl Mrtr {
    /// A registry for a server whose home is `home`.
    pub(crate) fn new(home: PathBuf) -> Self {
        Self {
            instance: uuid_like(),
            home,
            codec: OnceCell::new(),
            paused: Mutex::default(),
            streams: Mutex::default(),
        }
    }

    fn paused(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Paused>>> {
        self.paused.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn codec(&self) -> Result<&StateCodec, McpError> {
        let home = self.home.clone();
        let loaded = self
            .codec
            .get_or_init(|| async move {
                match tokio::task::spawn_blocking(move || StateCodec::load(&home)).await {
                    Ok(Ok(codec)) => Ok(codec),
                    Ok(Err(err)) => Err(format!(
                        "cannot read or create the request-state key ({}): {err}",
                        state::KEY_FILE
                    )),
                    Err(err) => Err(format!("loading the request-state key failed: {err}")),
                }
            })
            .await;
        loaded
            .as_ref()
            .map_err(|why| McpError::internal_error(why.clone(), None))
    }
}

impl MrtrCall {
    /// Starts `prompt` as a turn on `thread` and follows it for `call`: the turn's result,
    /// or its first questions. `replay_after` as for [`TurnRequest::replay_after`].
    pub(crate) async fn start(
        &self,
        call: &CallContext,
        thread: &Arc<Thread>,
        prompt: String,
        replay_after: Option<u64>,
    ) -> Result<CallToolResponse, McpError> {
        // The key is needed before anything is asked; a broken one fails the call now.
        self.mrtr.codec().await?;
        let submission_id = call.request_id_string();
        let cursor = replay_after.unwrap_or_else(|| thread.last_seq());
        let (questions_tx, questions) = mpsc::channel(8);
        let (done_tx, done) = watch::channel(None);
        let interrupt = CancellationToken::new();
        let ttl = thread.config().approval_timeout + LINGER;
        let paused = Arc::new(Paused {
            id: uuid_like(),
            thread: thread.clone(),
            submission_id: submission_id.clone(),
            interrupt: interrupt.clone(),
            done,
            attached: tokio::sync::Mutex::new(Detached {
                questions,
                cursor,
                waiting: BTreeMap::new(),
                announced: HashSet::new(),
                ended: false,
                next_key: 1,
            }),
            ttl,
        });
        let approver = Arc::new(MrtrApprover {
            questions: questions_tx,
            tool_call_id: submission_id.clone(),
            cwd: thread.config().cwd.clone(),
            can_elicit: self.can_elicit,
        });
        let request = TurnRequest {
            submission_id,
            input: TurnInput {
                items: vec![InputItem::Text { text: prompt }],
                ..TurnInput::default()
            },
            replay_after,
        };
        // Held before the driver starts, so that no retry can attach first.
        let mut detached = paused.attached.lock().await;
        let (thread_for_turn, id) = (thread.clone(), paused.id.clone());
        let mrtr = self.mrtr.clone();
        tokio::spawn(async move {
            let driven = drive_turn(
                &thread_for_turn,
                request,
                approver,
                &mut Unobserved,
                &interrupt,
            )
            .await;
            let _ = done_tx.send(Some(outcome_result(thread_for_turn.id(), driven)));
            // Kept a while for a late retry, then forgotten.
            tokio::time::sleep(ttl).await;
            mrtr.paused().remove(&id);
        });
        self.mrtr.paused().insert(paused.id.clone(), paused.clone());
        self.follow(call, &paused, &mut detached).await
    }

    /// A retry: checks its `requestState`, answers the questions it answers, and follows
    /// the turn on for `call`.
    pub(crate) async fn resume(
        &self,
        call: &CallContext,
        sealed: &str,
        responses: Option<InputResponses>,
    ) -> Result<CallToolResponse, McpError> {
        let codec = self.mrtr.codec().await?;
        let state = codec.open(sealed, &self.tool).map_err(|err| match err {
            StateError::Invalid(_) => McpError::invalid_params(err.to_string(), None),
            StateError::Expired => McpError::invalid_params(err.to_string(), None),
        })?;
        if state.instance != self.mrtr.instance {
            return Err(McpError::invalid_params(
                format!(
                    "the requestState belongs to a call paused on another deputy instance ({}); send the retry to the instance serving thread {}",
                    state.instance, state.thread
                ),
                None,
            ));
        }
        if self.tool == CONVERSATION_STREAM_TOOL {
            return self.resume_stream(call, &state, responses).await;
        }
        let paused = self.mrtr.paused().get(&state.call).cloned();
        let Some(paused) = paused else {
            return Err(McpError::invalid_params(
                format!(
                    "the call paused for this requestState is gone (it ended a while ago, or the server restarted); continue thread {} with codex-reply",
                    state.thread
                ),
                None,
            ));
        };
        let Ok(mut detached) = paused.attached.try_lock() else {
            return Err(McpError::invalid_request(
                "another request is already continuing this call; wait for its result",
                None,
            ));
        };
        let mut responses = responses.unwrap_or_default();
        for key in &state.questions {
            let Some(reply) = responses.remove(key) else {
                // Not answered in this retry: asked again below.
                continue;
            };
            if let Some(asked) = detached.waiting.remove(key) {
                // The question may have been settled meanwhile (its timeout passed).
                let _ = asked
                    .answer
                    .send(answer_from_reply(&reply, &asked.expected));
            }
        }
        self.follow(call, &paused, &mut detached).await
    }

    /// Follows the turn for `call`, attached: forwards its events from the cursor,
    /// returns its result, or its unanswered questions with a fresh state.
    async fn follow(
        &self,
        call: &CallContext,
        paused: &Arc<Paused>,
        detached: &mut Detached,
    ) -> Result<CallToolResponse, McpError> {
        let heartbeat = paused.thread.config().progress_interval;
        let mut progress = ProgressReporter::new(
            call.peer.clone(),
            call.progress_token.clone(),
            call.client_gone.clone(),
        );
        let mut ticker =
            tokio::time::interval_at(tokio::time::Instant::now() + heartbeat, heartbeat);
        let mut events = paused.thread.subscribe(detached.cursor);
        let mut done = paused.done.clone();
        loop {
            // A question settled meanwhile (its approval timeout passed, its turn ended)
            // is not asked again.
            detached
                .waiting
                .retain(|_, asked| !asked.answer.is_closed());
            // Questions a retry left unanswered are asked again at once.
            if !detached.waiting.is_empty() {
                return self.ask(paused, detached).await;
            }
            tokio::select! {
                biased;
                () = call.cancelled.cancelled() => {
                    // The request was cancelled (or its client went away): as for any
                    // cancelled call, the turn is interrupted. No result is sent.
                    paused.interrupt.cancel();
                    return Err(McpError::invalid_request("the request was cancelled", None));
                }
                next = events.next(), if !detached.ended => match next {
                    Some(event) => self.forward(call, paused, detached, &mut progress, &event).await,
                    // The thread stopped: the driver reports how.
                    None => detached.ended = true,
                },
                Some(asked) = detached.questions.recv() => {
                    // Its approval request event is in the log already: sent first.
                    while !detached.announced.contains(&asked.params.codex_call_id) && !detached.ended {
                        match events.next().await {
                            Some(event) => self.forward(call, paused, detached, &mut progress, &event).await,
                            None => detached.ended = true,
                        }
                    }
                    let key = format!("approval-{}", detached.next_key);
                    detached.next_key += 1;
                    detached.waiting.insert(key, asked);
                    // Questions asked together go out together.
                    while let Ok(more) = detached.questions.try_recv() {
                        let key = format!("approval-{}", detached.next_key);
                        detached.next_key += 1;
                        detached.waiting.insert(key, more);
                    }
                }
                changed = done.changed(), if detached.ended => {
                    let result = done.borrow().clone();
                    match (changed, result) {
                        (_, Some(result)) => return Ok(result.into()),
                        (Err(_), None) => {
                            return Err(McpError::internal_error("the turn's driver stopped without a result", None));
                        }
                        (Ok(()), None) => {}
                    }
                }
                _ = ticker.tick() => progress.tick().await,
            }
            if detached.ended
                && let Some(result) = done.borrow().clone()
            {
                return Ok(result.into());
            }
        }
    }

    /// Sends one event of the log if it is this turn's (or the thread's own), and moves
    /// the cursor past it.
    async fn forward(
        &self,
        call: &CallContext,
        paused: &Paused,
        detached: &mut Detached,
        progress: &mut ProgressReporter,
        event: &ThreadEvent,
    ) {
        detached.cursor = event.seq;
        let ours = event.turn_id.is_none() || *event.submission_id == *paused.submission_id;
        if !ours {
            return;
        }
        // Every kind of question, also one Codex has no event for.
        if let ThreadEventMsg::QuestionAsked(asked) = &event.msg {
            detached
                .announced
                .insert(asked.question.call_id().to_string());
        }
        for (part, legacy) in codex_events(event).into_iter().enumerate() {
            progress.on_event(&legacy.msg).await;
            call.forward(event, part, legacy).await;
        }
        detached.ended |= event.turn_id.is_some() && TurnOutcome::from_end(&event.msg).is_some();
    }

    /// The call's result while questions wait: each as an input request, and the state
    /// a retry must echo.
    async fn ask(
        &self,
        paused: &Paused,
        detached: &Detached,
    ) -> Result<CallToolResponse, McpError> {
        self.input_required(
            &paused.id,
            paused.thread.id(),
            &detached.waiting,
            paused.ttl,
        )
        .await
    }

    /// `InputRequiredResult` for the questions `waiting` of the paused call `call_id` on
    /// `thread_id`, with its sealed state, valid for `ttl`.
    async fn input_required(
        &self,
        call_id: &str,
        thread_id: &str,
        waiting: &BTreeMap<String, Asked>,
        ttl: Duration,
    ) -> Result<CallToolResponse, McpError> {
        let codec = self.mrtr.codec().await?;
        let mut requests = BTreeMap::new();
        for (key, asked) in waiting {
            let request = input_request(&asked.params).ok_or_else(|| {
                McpError::internal_error("cannot describe an approval question", None)
            })?;
            requests.insert(key.clone(), request);
        }
        let state = State {
            instance: self.mrtr.instance.clone(),
            call: call_id.to_string(),
            thread: thread_id.to_string(),
            questions: waiting.keys().cloned().collect(),
        };
        let sealed = codec.seal(&state, &self.tool, ttl);
        Ok(InputRequiredResult::new(Some(requests), Some(sealed)).into())
    }
}

/// The driver's observer when a paused call follows the log itself.
struct Unobserved;

impl TurnObserver for Unobserved {
    async fn deliver(&mut self, _event: &ThreadEvent) {}
}

/// A fresh id for an instance or a paused call (not a secret: states are sealed).
fn uuid_like() -> String {
    uuid::Uuid::now_v7().to_string()
}
