//! The MCP compatibility fixes, as an adapter any transport can use: what rmcp gets
//! wrong or leaves to the transport, corrected between the wire and rmcp.
//!
//! - `frames`: a frame rmcp cannot take (not JSON, unreadable, over the size limit) is
//!   answered under its own id, or dropped when it is a notification or response; used
//!   wherever raw messages arrive (stdio lines, WebSocket frames, HTTP bodies).
//! - [`Compat`]: wraps any rmcp transport (the framed one of stdio, or a Streamable
//!   HTTP session's) to hold the client to the lifecycle (`handshake`) and number the
//!   server's own requests from 1 on the wire (`request_ids`).

pub(crate) mod frames;
mod handshake;
mod request_ids;

use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ErrorData, ServerJsonRpcMessage};
use rmcp::transport::Transport;

use handshake::{Admission, Handshake};

/// An rmcp transport with the lifecycle gate and the request-id renumbering applied.
pub(crate) struct Compat<T> {
    inner: T,
    handshake: Handshake,
}

impl<T> Compat<T> {
    /// Wraps `inner`.
    pub(crate) fn new(inner: T) -> Self {
        Self {
            inner,
            handshake: Handshake::default(),
        }
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for Compat<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        message: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(request_ids::outgoing(message))
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            let message = self.inner.receive().await?;
            match self.handshake.admit(&message) {
                Admission::Pass => {}
                Admission::Refuse(id, why) => {
                    let error = ErrorData::invalid_request(why, None);
                    if let Err(err) = self
                        .inner
                        .send(ServerJsonRpcMessage::error(error, Some(id)))
                        .await
                    {
                        tracing::debug!("could not refuse a request: {err}");
                    }
                    continue;
                }
                Admission::Drop => continue,
            }
            if let Some(message) = request_ids::incoming(message) {
                return Some(message);
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}
