//! Loading threads off the request path. Requests are handled in arrival order, but
//! reading a long session back from disk can take seconds: a request that needs a thread
//! not loaded yet starts loading it in the background, and it — with every later request
//! about that thread — waits until the load is done, while requests about other threads
//! (and `thread/list`, `thread/read`, …) go on being answered.

use std::collections::HashMap;
use std::sync::Arc;

use deputy_core::Thread;
use tokio::sync::mpsc;

use crate::protocol::{ClientRequest, JsonRpcError, RequestId, ThreadStartResponse, methods};

use super::{Server, load_error};

/// A `thread/resume` done: the thread, the seq before its new `session_configured` when
/// this call resumed it, and the response.
pub(super) type Resumed = Result<(Arc<Thread>, Option<u64>, ThreadStartResponse), JsonRpcError>;

/// Requests held back while their thread loads, by canonical thread id.
pub(crate) type Waiting = HashMap<String, Vec<(RequestId, ClientRequest)>>;

/// A background load, done.
pub(crate) struct Loaded {
    thread_id: String,
    outcome: Outcome,
}

enum Outcome {
    /// `thread/resume` `request`, done.
    Resumed {
        request: RequestId,
        result: Box<Resumed>,
    },
    /// The thread is loaded, or could not be.
    Ready(Result<(), JsonRpcError>),
}

/// Where background loads report.
pub(crate) type LoadedSender = mpsc::UnboundedSender<Loaded>;

/// The thread a request is about, and whether handling it loads that thread.
fn thread_of(request: &ClientRequest) -> Option<(&str, bool)> {
    match request {
        ClientRequest::ThreadResume(p) => Some((&p.thread_id, true)),
        ClientRequest::TurnStart(p) => Some((&p.thread_id, true)),
        ClientRequest::ReviewStart(p) => Some((&p.thread_id, true)),
        ClientRequest::ThreadCompactStart(p) => Some((&p.thread_id, true)),
        ClientRequest::TurnInterrupt(p) => Some((&p.thread_id, false)),
        ClientRequest::ThreadArchive(p) => Some((&p.thread_id, false)),
        ClientRequest::Initialize(_)
        | ClientRequest::ThreadStart(_)
        | ClientRequest::ThreadList(_)
        | ClientRequest::ThreadRead(_)
        | ClientRequest::ModelList(_) => None,
    }
}

/// How the engine spells thread id `id` (lowercase, hyphenated), or `id` itself.
fn canonical(id: &str) -> String {
    deputy_core::rollout::parse_thread_id(id).unwrap_or_else(|_| id.to_string())
}

impl Server {
    /// Handles `request` now, or holds it back behind its thread's load (starting the load
    /// when the request needs a thread that is not loaded).
    pub(super) async fn route(&mut self, id: RequestId, request: ClientRequest) {
        let Some((thread_id, loads)) = thread_of(&request) else {
            return self.dispatch(id, request).await;
        };
        let key = canonical(thread_id);
        if let Some(waiting) = self.waiting.get_mut(&key) {
            waiting.push((id, request));
            return;
        }
        if !loads || self.manager.get(&key).is_some() {
            return self.dispatch(id, request).await;
        }
        let loaded = self.loaded.clone();
        let manager = self.manager.clone();
        match request {
            ClientRequest::ThreadResume(params) => {
                let layers = match self.layers_with(params.settings.clone()) {
                    Ok(layers) => layers,
                    // Answered (with this error) the usual way.
                    Err(_) => return self.dispatch(id, ClientRequest::ThreadResume(params)).await,
                };
                let home = self.layers.deputy_home.clone();
                self.waiting.insert(key.clone(), Vec::new());
                tokio::spawn(async move {
                    let result =
                        super::threads::resume(manager, home, params.thread_id, layers).await;
                    let outcome = Outcome::Resumed {
                        request: id,
                        result: Box::new(result),
                    };
                    let _ = loaded.send(Loaded {
                        thread_id: key,
                        outcome,
                    });
                });
            }
            request => {
                let layers = (*self.layers).clone();
                let lookup = key.clone();
                self.waiting.insert(key.clone(), vec![(id, request)]);
                tokio::spawn(async move {
                    let result = manager
                        .open(&lookup, &layers)
                        .await
                        .map(|_| ())
                        .map_err(|e| load_error(&lookup, e));
                    let _ = loaded.send(Loaded {
                        thread_id: key,
                        outcome: Outcome::Ready(result),
                    });
                });
            }
        }
    }

    /// A background load is done: answers what it was for, then handles the requests held
    /// back behind it, in order.
    pub(crate) async fn loaded(&mut self, loaded: Loaded) {
        let waiting = self.waiting.remove(&loaded.thread_id).unwrap_or_default();
        let failed = match loaded.outcome {
            Outcome::Resumed { request, result } => {
                self.finish_resume(request, *result).await;
                None
            }
            Outcome::Ready(result) => result.err(),
        };
        for (id, request) in waiting {
            match &failed {
                // Loading it again would fail the same way.
                Some(error) if thread_of(&request).is_some_and(|(_, loads)| loads) => {
                    self.outgoing.error(Some(id), error.clone()).await;
                }
                _ => Box::pin(self.route(id, request)).await,
            }
        }
    }

    /// Whether a load is under way.
    pub(crate) fn loading(&self) -> bool {
        !self.waiting.is_empty()
    }

    pub(super) async fn finish_resume(&mut self, id: RequestId, result: Resumed) {
        match result {
            Ok((thread, resumed_after, response)) => {
                self.outgoing
                    .respond::<methods::ThreadResume>(id, &response)
                    .await;
                self.follow(&thread, resumed_after.unwrap_or_else(|| thread.last_seq()));
            }
            Err(error) => self.outgoing.error(Some(id), error).await,
        }
    }
}
