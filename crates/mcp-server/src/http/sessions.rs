//! The Streamable HTTP sessions of the 2025-11-25 era: rmcp's own in-memory sessions,
//! each transport wrapped in the MCP compatibility adapter ([`Compat`]), so that an HTTP
//! client is held to the same lifecycle and sees the same request ids as a stdio one.

use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};

use crate::compat::Compat;

/// rmcp's local sessions behind the compatibility adapter.
#[derive(Debug)]
pub(crate) struct CompatSessions(LocalSessionManager);

impl CompatSessions {
    /// Sessions that expire after `idle` without a message either way, whose streams
    /// are kept for resumption in `events`.
    pub(crate) fn new(idle: Duration, events: Arc<dyn EventStore>) -> Self {
        let mut sessions = LocalSessionManager::default().with_event_store(events);
        sessions.session_config.keep_alive = Some(idle);
        Self(sessions)
    }
}

/// The transport of one session.
type Inner = <LocalSessionManager as SessionManager>::Transport;

impl SessionManager for CompatSessions {
    type Error = <LocalSessionManager as SessionManager>::Error;
    type Transport = Compat<Inner>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.0.create_session().await?;
        Ok((id, Compat::new(transport)))
    }

    fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<ServerJsonRpcMessage, Self::Error>> + Send {
        self.0.initialize_session(id, message)
    }

    fn has_session(
        &self,
        id: &SessionId,
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send {
        self.0.has_session(id)
    }

    fn close_session(
        &self,
        id: &SessionId,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.0.close_session(id)
    }

    fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> impl Future<
        Output = Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>,
    > + Send {
        self.0.create_stream(id, message)
    }

    fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.0.accept_message(id, message)
    }

    fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> impl Future<
        Output = Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>,
    > + Send {
        self.0.create_standalone_stream(id)
    }

    fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> impl Future<
        Output = Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>,
    > + Send {
        self.0.resume(id, last_event_id)
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        Ok(match self.0.restore_session(id).await? {
            RestoreOutcome::Restored(transport) => RestoreOutcome::Restored(Compat::new(transport)),
            RestoreOutcome::AlreadyPresent => RestoreOutcome::AlreadyPresent,
            RestoreOutcome::NotSupported => RestoreOutcome::NotSupported,
            // A kind of outcome this rmcp does not know: treated as unsupported (a 404).
            #[allow(unreachable_patterns, reason = "rmcp's enum is non-exhaustive")]
            _ => RestoreOutcome::NotSupported,
        })
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.0.event_store()
    }
}
