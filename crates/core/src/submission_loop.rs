//! A thread's submission loop: it owns the thread's [`Session`], takes the ops its
//! [`Thread`] handles send, runs one turn at a time (later ones wait in a queue), and
//! stops on shutdown or when every handle is gone.

// Runs on the async runtime: no blocking std calls (see clippy.toml).
#![cfg_attr(not(test), warn(clippy::disallowed_methods))]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use deputy_protocol::{
    Op, ReviewRequest, Submission, ThreadEventMsg, TurnAbortReason, WarningEvent,
};
use futures::StreamExt;
use futures::channel::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::approval::ApprovalGate;
use crate::context::{Session, ToolState, TurnSettings};
use crate::event_log::EventLog;
use crate::sync::lock;
use crate::thread::{OpReceiver, Thread, ThreadStart};
use crate::tools::ThreadTools;
use crate::turn::{TurnKind, TurnStart};
use crate::turn_clock::TurnClock;

/// Starts the submission loop for a session and returns the handle.
pub(crate) fn spawn_thread(start: ThreadStart) -> Arc<Thread> {
    spawn(start, |_| {}, false)
}

/// Like [`spawn_thread`], for a new thread of the user's: `announce` publishes its first
/// events, then its loop adds the project's AGENTS.md instructions to the history (read off
/// the async runtime, skipped files reported as warnings) before it takes any op.
pub(crate) fn spawn_new_thread(start: ThreadStart, announce: impl FnOnce(&Thread)) -> Arc<Thread> {
    spawn(start, announce, true)
}

fn spawn(
    start: ThreadStart,
    announce: impl FnOnce(&Thread),
    read_project_docs: bool,
) -> Arc<Thread> {
    let (submit_tx, submit_rx) = mpsc::unbounded();
    let stopped = CancellationToken::new();
    let log = Arc::new(EventLog::new(
        start.id.clone(),
        start.next_seq,
        start.rollout.clone(),
    ));
    let settings = Arc::new(Mutex::new(TurnSettings {
        config: start.config,
        client: start.client,
    }));
    let session = Arc::new(Session {
        approvals: ApprovalGate::new(),
        settings: settings.clone(),
        log: log.clone(),
        history: Mutex::new(start.history),
        total_usage: Mutex::default(),
        usage_mark: Mutex::default(),
        rollout: start.rollout,
        tool_state: ToolState::default(),
        unusable: Mutex::default(),
    });
    let tools = Arc::new(ThreadTools::default());
    let thread = Arc::new(Thread::new(
        start.id,
        settings,
        submit_tx,
        stopped.clone(),
        log,
        tools.clone(),
    ));
    announce(&thread);
    tokio::spawn(async move {
        // Dropped last, when the loop has ended or its task is dropped.
        let _stopped = stopped.drop_guard();
        // The start-up steps run boxed, freed once done: the task is as large as its
        // largest step for as long as the thread lives, idle or not.
        if read_project_docs {
            Box::pin(add_project_instructions(&session)).await;
        }
        let mut submit_rx = submit_rx;
        let mcp = crate::mcp::ThreadServers::default();
        let held = Box::pin(start_mcp_servers(&session, &tools, &mcp, &mut submit_rx)).await;
        submission_loop(session, tools, &mcp, held, submit_rx).await;
    });
    thread
}

struct RunningTurn {
    turn_id: String,
    cancel: CancellationToken,
    handle: JoinHandle<()>,
}

struct QueuedTurn {
    turn_id: String,
    submission_id: String,
    kind: QueuedKind,
}

/// What a queued turn does: a model turn (input, compaction) or a review.
enum QueuedKind {
    /// A turn of the model's (see `crate::turn`).
    Model(TurnKind),
    /// A review (see `crate::review`).
    Review(ReviewRequest),
}

/// Appends a new thread's AGENTS.md instructions to its history (right after the developer
/// messages, before any turn) and reports the files that were skipped or cut.
async fn add_project_instructions(session: &Session) {
    let config = lock(&session.settings).config.clone();
    let (message, warnings) = crate::instructions::project_instructions(&config).await;
    session.record(message);
    for message in warnings {
        session
            .log
            .publish(None, "", ThreadEventMsg::Warning(WarningEvent { message }));
    }
}

/// Starts the thread's MCP servers while taking its ops. Turns submitted meanwhile wait for
/// the servers (their tools are in the first request); interrupting every waiting turn,
/// shutting the thread down or dropping its last handle stops the servers still starting
/// (their start is dropped, and with it their processes) instead of waiting out their
/// startup timeout. Returns the ops to handle next, in order.
async fn start_mcp_servers(
    session: &Session,
    tools: &ThreadTools,
    mcp: &crate::mcp::ThreadServers,
    ops: &mut OpReceiver,
) -> VecDeque<Submission> {
    let config = lock(&session.settings).config.clone();
    let cancel = CancellationToken::new();
    let mut held: VecDeque<Submission> = VecDeque::new();
    let starting = mcp.start(&config, &session.log, tools, &cancel);
    tokio::pin!(starting);
    let unusable = loop {
        let submission = tokio::select! {
            unusable = &mut starting => break unusable,
            submission = ops.next(), if !cancel.is_cancelled() => submission.map(|boxed| *boxed),
        };
        let Some(submission) = submission else {
            let _ = abort_waiting(session, &mut held, |_| true);
            cancel.cancel();
            continue;
        };
        match &submission.op {
            Op::Interrupt { turn_id } => {
                let aborted = abort_waiting(session, &mut held, |waiting| waiting == turn_id);
                if aborted && !held.iter().any(|held| turn_of(&held.op).is_some()) {
                    cancel.cancel();
                }
            }
            Op::Shutdown => {
                let _ = abort_waiting(session, &mut held, |_| true);
                held.push_back(submission);
                cancel.cancel();
            }
            Op::UserInput { .. } | Op::Review { .. } | Op::Compact { .. } | Op::Answer { .. } => {
                held.push_back(submission);
            }
        }
    };
    *lock(&session.unusable) = unusable;
    held
}

/// The turn an op starts, if it starts one.
fn turn_of(op: &Op) -> Option<&str> {
    match op {
        Op::UserInput { turn_id, .. } | Op::Review { turn_id, .. } | Op::Compact { turn_id } => {
            Some(turn_id)
        }
        Op::Interrupt { .. } | Op::Answer { .. } | Op::Shutdown => None,
    }
}

/// Ends the held turns `which` picks, which never started (interrupted); whether there
/// were any.
fn abort_waiting(
    session: &Session,
    held: &mut VecDeque<Submission>,
    which: impl Fn(&str) -> bool,
) -> bool {
    let before = held.len();
    held.retain(|submission| match turn_of(&submission.op) {
        Some(turn_id) if which(turn_id) => {
            session.log.publish(
                Some(turn_id),
                &submission.id,
                TurnClock::never_started().aborted(turn_id, TurnAbortReason::Interrupted),
            );
            false
        }
        _ => true,
    });
    held.len() < before
}

/// Routes ops (`held` first) until shutdown or until every handle is gone (the channel
/// closes), running one turn at a time, then stops any running turn.
async fn submission_loop(
    session: Arc<Session>,
    tools: Arc<ThreadTools>,
    mcp: &crate::mcp::ThreadServers,
    mut held: VecDeque<Submission>,
    mut ops: OpReceiver,
) {
    let mut running: Option<RunningTurn> = None;
    let mut queue: VecDeque<QueuedTurn> = VecDeque::new();
    loop {
        let finished = async {
            match running.as_mut() {
                Some(turn) => {
                    let _ = (&mut turn.handle).await;
                }
                None => std::future::pending().await,
            }
        };
        let submission = match held.pop_front() {
            Some(submission) => Some(submission),
            None => tokio::select! {
                () = finished => {
                    running = queue.pop_front().map(|next| start_turn(&session, &tools, next));
                    if running.is_none() {
                        // Idle until the next op: the queues give back spare capacity.
                        queue.shrink_to_fit();
                        held.shrink_to_fit();
                    }
                    continue;
                }
                submission = ops.next() => submission.map(|boxed| *boxed),
            },
        };
        let Some(Submission { id, op }) = submission else {
            break;
        };
        match op {
            Op::UserInput {
                turn_id,
                items,
                overrides,
                output_schema,
            } => {
                let turn = QueuedTurn {
                    turn_id,
                    submission_id: id,
                    kind: QueuedKind::Model(TurnKind::Input {
                        items,
                        overrides,
                        output_schema,
                    }),
                };
                enqueue(&session, &tools, &mut running, &mut queue, turn);
            }
            Op::Review { turn_id, request } => {
                let turn = QueuedTurn {
                    turn_id,
                    submission_id: id,
                    kind: QueuedKind::Review(request),
                };
                enqueue(&session, &tools, &mut running, &mut queue, turn);
            }
            Op::Compact { turn_id } => {
                let turn = QueuedTurn {
                    turn_id,
                    submission_id: id,
                    kind: QueuedKind::Model(TurnKind::Compact),
                };
                enqueue(&session, &tools, &mut running, &mut queue, turn);
            }
            Op::Interrupt { turn_id } => {
                if let Some(turn) = running.as_ref().filter(|t| t.turn_id == turn_id) {
                    turn.cancel.cancel();
                    // An interrupt stops whatever the model left running, too.
                    crate::tools::stop_unified_exec(&session);
                } else if let Some(at) = queue.iter().position(|t| t.turn_id == turn_id)
                    && let Some(dropped) = queue.remove(at)
                {
                    abort_queued(&session, dropped);
                }
            }
            Op::Answer { id: call_id, reply } => {
                if !session.approvals.resolve(&call_id, reply) {
                    tracing::warn!(call_id, "an answer to a question nobody is waiting on");
                }
            }
            Op::Shutdown => {
                // Boxed, like the end below: the loop's task is as large as its largest
                // await for as long as the thread lives.
                Box::pin(async {
                    stop(&session, running.take(), &mut queue).await;
                    mcp.release().await;
                    session
                        .log
                        .publish_final(&id, ThreadEventMsg::ShutdownComplete)
                        .await;
                })
                .await;
                return;
            }
        }
    }
    Box::pin(async {
        stop(&session, running, &mut queue).await;
        mcp.release().await;
        session.close_rollout().await;
    })
    .await;
    session.log.close();
}

/// Starts `turn` now if nothing runs, else queues it behind the others.
fn enqueue(
    session: &Arc<Session>,
    tools: &Arc<ThreadTools>,
    running: &mut Option<RunningTurn>,
    queue: &mut VecDeque<QueuedTurn>,
    turn: QueuedTurn,
) {
    if running.is_some() {
        queue.push_back(turn);
    } else {
        *running = Some(start_turn(session, tools, turn));
    }
}

fn start_turn(session: &Arc<Session>, tools: &Arc<ThreadTools>, turn: QueuedTurn) -> RunningTurn {
    let cancel = CancellationToken::new();
    let handle = tokio::spawn(supervise_turn(
        session.clone(),
        tools.clone(),
        turn.submission_id,
        turn.turn_id.clone(),
        turn.kind,
        cancel.clone(),
    ));
    RunningTurn {
        turn_id: turn.turn_id,
        cancel,
        handle,
    }
}

/// Ends a turn that never started, so whoever waits for it hears that it is over.
fn abort_queued(session: &Session, turn: QueuedTurn) {
    session.log.publish(
        Some(&turn.turn_id),
        &turn.submission_id,
        TurnClock::never_started().aborted(&turn.turn_id, TurnAbortReason::Interrupted),
    );
}

/// Runs a turn; if it panics, still ends it with a `turn_failed` event so no front
/// door waits forever for a turn that is gone.
async fn supervise_turn(
    session: Arc<Session>,
    tools: Arc<ThreadTools>,
    submission_id: String,
    turn_id: String,
    kind: QueuedKind,
    cancel: CancellationToken,
) {
    let turn = match kind {
        QueuedKind::Model(kind) => tokio::spawn(crate::turn::run_turn(
            session.clone(),
            TurnStart {
                submission_id: submission_id.clone(),
                turn_id: turn_id.clone(),
                kind,
                tools,
            },
            cancel,
        )),
        QueuedKind::Review(request) => tokio::spawn(crate::review::run_review(
            session.clone(),
            submission_id.clone(),
            turn_id.clone(),
            request,
            cancel,
            spawn_thread,
        )),
    };
    if let Err(err) = turn.await {
        tracing::error!("turn {turn_id} ended abnormally: {err}");
        session
            .log
            .publish_durable(
                Some(&turn_id),
                &submission_id,
                // How long it ran is not known here.
                TurnClock::never_started().failed(
                    format!("internal error: the turn ended abnormally ({err})"),
                    deputy_protocol::CodexErrorInfo::Other,
                ),
            )
            .await;
    }
}

async fn stop(session: &Session, turn: Option<RunningTurn>, queue: &mut VecDeque<QueuedTurn>) {
    for queued in queue.drain(..) {
        abort_queued(session, queued);
    }
    if let Some(turn) = turn {
        turn.cancel.cancel();
        let _ = turn.handle.await;
    }
    crate::tools::stop_unified_exec(session);
}
