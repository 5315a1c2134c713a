//! A scripted stand-in for an OpenAI-compatible model endpoint on 127.0.0.1.
//!
//! Tests queue [`MockResponse`]s; each `POST /v1/responses` or `POST /v1/chat/completions`
//! takes the next one in order and every request is recorded for later assertions. Tests
//! whose requests arrive in no fixed order (concurrent sessions) can instead answer each
//! request from its content with [`MockModelServer::respond_with`].

pub mod chat;
mod recorded;
mod response;
pub mod responses;
mod serve;
mod timing;

use std::collections::VecDeque;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener as StdTcpListener};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use axum::serve::ListenerExt;
use tokio::sync::oneshot;

pub use recorded::RecordedRequest;
pub use response::{MockResponse, SseEvent};
pub use timing::{FrameTiming, ResponseTiming};

/// State shared between the test thread and the server's runtime.
pub(crate) struct Shared {
    state: Mutex<State>,
    /// Signalled whenever a request is recorded.
    recorded: Condvar,
    /// When each routed request arrived and its answer finished; kept apart from `state`
    /// so that noting a finished answer never waits behind a responder.
    pub(crate) timings: timing::Timings,
}

/// Computes the answer to a request from the request itself.
type Responder = Arc<dyn Fn(&RecordedRequest) -> MockResponse + Send + Sync>;

#[derive(Default)]
struct State {
    queue: VecDeque<MockResponse>,
    requests: Vec<RecordedRequest>,
    /// Answers the routed requests that find the queue empty.
    responder: Option<Responder>,
    /// Set by [`MockModelServer::keep_request_bodies`]`(false)`.
    drop_bodies: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A test that panicked while holding the lock must not hide later diagnostics.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records `request` and, when it is `routed` to a model endpoint, takes the next
    /// scripted response, else asks the responder if one is set. Returns the request's
    /// 1-based number and that response.
    pub(crate) fn record(
        &self,
        mut request: RecordedRequest,
        routed: bool,
    ) -> (usize, Option<MockResponse>) {
        let mut state = self.lock();
        let queued = if routed {
            state.queue.pop_front()
        } else {
            None
        };
        let responder = if routed && queued.is_none() {
            state.responder.clone()
        } else {
            None
        };
        let (mut state, response) = match responder {
            // Called outside the lock, so that a responder may use the server's methods.
            Some(responder) => {
                drop(state);
                let response = responder(&request);
                (self.lock(), Some(response))
            }
            // Taking a queued response and recording the request stay one step, so that
            // `requests()[n]` is the request that got the n-th queued response.
            None => (state, queued),
        };
        if state.drop_bodies {
            request.body = serde_json::Value::Null;
            request.raw_body = String::new();
        }
        state.requests.push(request);
        let number = state.requests.len();
        drop(state);
        self.recorded.notify_all();
        (number, response)
    }
}

/// A real HTTP server on `127.0.0.1` serving scripted OpenAI streaming responses.
///
/// It runs its own single-threaded tokio runtime on a background thread, so it works the
/// same from sync and async tests. Dropping it stops the server and closes every
/// connection, including stalled ones.
pub struct MockModelServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl MockModelServer {
    /// Starts a server on an ephemeral port.
    ///
    /// # Panics
    /// When no socket or runtime can be created; see [`MockModelServer::try_start`].
    pub fn start() -> Self {
        match Self::try_start() {
            Ok(server) => server,
            Err(err) => panic!("mock model server failed to start: {err}"),
        }
    }

    /// Starts a server on an ephemeral port, reporting socket and runtime errors.
    pub fn try_start() -> io::Result<Self> {
        let listener = StdTcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let listener = {
            let _entered = runtime.enter();
            tokio::net::TcpListener::from_std(listener)?
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            recorded: Condvar::new(),
            timings: timing::Timings::default(),
        });
        let app = serve::router(Arc::clone(&shared));
        let (shutdown, shutdown_rx) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(format!("mock-model-server-{}", addr.port()))
            .spawn(move || {
                // Small frames must not wait for Nagle's algorithm, or pacing tests drift.
                let listener = listener.tap_io(|tcp| {
                    let _ = tcp.set_nodelay(true);
                });
                runtime.block_on(async move {
                    tokio::select! {
                        _ = axum::serve(listener, app) => {}
                        _ = shutdown_rx => {}
                    }
                });
                // Dropping the runtime here drops every connection task, releasing stalls.
                drop(runtime);
            })?;
        Ok(Self {
            addr,
            shared,
            shutdown: Some(shutdown),
            thread: Some(thread),
        })
    }

    /// The base URL to configure as a provider's `base_url`: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The socket address the server listens on.
    pub fn address(&self) -> SocketAddr {
        self.addr
    }

    /// Queues `response` behind those already queued.
    pub fn push(&self, response: MockResponse) {
        self.shared.lock().queue.push_back(response);
    }

    /// Queues `responses` in order behind those already queued.
    pub fn push_all(&self, responses: impl IntoIterator<Item = MockResponse>) {
        self.shared.lock().queue.extend(responses);
    }

    /// Answers every model request that finds the queue empty with `responder(request)`,
    /// for tests whose requests arrive in no predictable order (concurrent sessions).
    /// Queued responses still come first; a later call replaces the responder.
    pub fn respond_with(
        &self,
        responder: impl Fn(&RecordedRequest) -> MockResponse + Send + Sync + 'static,
    ) {
        self.shared.lock().responder = Some(Arc::new(responder));
    }

    /// When each answered model request arrived and when its answer was completely sent,
    /// by request number; benchmarks subtract this model time from what the client saw.
    pub fn response_timings(&self) -> Vec<ResponseTiming> {
        self.shared.timings.snapshot()
    }

    /// Whether the time each body frame of a streamed answer is handed to the connection
    /// is recorded from now on (off by default: a flood of frames would grow the record).
    pub fn record_frame_times(&self, record: bool) {
        self.shared.timings.record_frames(record);
    }

    /// Every frame time recorded while [`MockModelServer::record_frame_times`] was on.
    pub fn frame_times(&self) -> Vec<FrameTiming> {
        self.shared.timings.frames()
    }

    /// Whether requests received from now on keep their bodies in [`MockModelServer::requests`]
    /// (the default). A long session's requests grow with its history, so recording
    /// thousands of them whole costs gigabytes; responders still see every body.
    pub fn keep_request_bodies(&self, keep: bool) {
        self.shared.lock().drop_bodies = !keep;
    }

    /// How many queued responses no request has taken yet.
    pub fn pending_responses(&self) -> usize {
        self.shared.lock().queue.len()
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// How many requests have been received so far.
    pub fn request_count(&self) -> usize {
        self.shared.lock().requests.len()
    }

    /// Waits until at least `n` requests have arrived and returns all received so far.
    ///
    /// The error says how many arrived and which, for a readable test failure.
    pub fn wait_for_requests(
        &self,
        n: usize,
        timeout: Duration,
    ) -> Result<Vec<RecordedRequest>, String> {
        let state = self.shared.lock();
        let (state, _) = self
            .shared
            .recorded
            .wait_timeout_while(state, timeout, |state| state.requests.len() < n)
            .unwrap_or_else(PoisonError::into_inner);
        if state.requests.len() >= n {
            return Ok(state.requests.clone());
        }
        let seen: Vec<String> = state
            .requests
            .iter()
            .map(RecordedRequest::summary)
            .collect();
        Err(format!(
            "mock model server: waited {timeout:?} for {n} request(s) but received {}: {seen:?}",
            state.requests.len()
        ))
    }
}

impl Drop for MockModelServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl std::fmt::Debug for MockModelServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockModelServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}
