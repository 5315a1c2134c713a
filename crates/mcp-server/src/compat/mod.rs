//! The MCP compatibility fixes, as an adapter any transport can use: what rmcp gets
//! wrong or leaves to the transport, corrected between the wire and rmcp.
//!
//! - `frames`: a frame rmcp cannot take (not JSON, unreadable, over the size limit) is
//!   answered under its own id, or dropped when it is a notification or response; used
//!   wherever raw messages arrive (stdio lines, WebSocket frames, HTTP bodies).
//! - [`Compat`]: wraps any rmcp transport (the framed one of stdio, or a Streamable
//!   HTTP session's) to hold the client to the lifecycle (`handshake`) and number the
//!   server's own requests from 1 on the wire (`request_ids`). Where the transport's output
//!   queue takes text ([`Compat::with_output`]), a plain `tools/list` is answered here with the
//!   catalogue's prebuilt text instead of rmcp parsing, copying and serializing it.

pub(crate) mod frames;
mod handshake;
mod request_ids;

use deputy_jsonrpc::OutputQueue;
use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ErrorData, ServerJsonRpcMessage};
use rmcp::transport::Transport;

use crate::tool_catalogue;

use handshake::{Admission, Handshake};

/// An rmcp transport with the lifecycle gate and the request-id renumbering applied.
pub(crate) struct Compat<T> {
    inner: T,
    handshake: Handshake,
    /// The queue `inner` writes to, where answers can go as text past rmcp.
    output: Option<OutputQueue>,
}

impl<T> Compat<T> {
    /// Wraps `inner`.
    pub(crate) fn new(inner: T) -> Self {
        Self {
            inner,
            handshake: Handshake::default(),
            output: None,
        }
    }

    /// Wraps `inner`, which writes its messages as text to `output`: a plain `tools/list`
    /// is answered there with the catalogue's prebuilt text.
    pub(crate) fn with_output(inner: T, output: OutputQueue) -> Self {
        Self {
            output: Some(output),
            ..Self::new(inner)
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
            let Some(message) = request_ids::incoming(message) else {
                continue;
            };
            if let Some(output) = &self.output
                && let Some(id) = self.handshake.plain_tools_list(&message)
            {
                // A closed output ends the session elsewhere; nothing more to do here.
                let _ = output.send(tool_catalogue::list_answer(id)).await;
                continue;
            }
            return Some(message);
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}
