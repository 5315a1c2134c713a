//! rmcp's end of the relay: typed messages in from the input reader, lines out
//! through the bounded output queue.
//!
//! rmcp never waits for its own sends — each one is a task of its own — so its
//! loop would keep taking input however far behind the output is. Sends here wait
//! for a place in the output queue before serializing, and the input reader waits
//! for the same queue, which carries the backpressure back to stdin.

use std::io;

use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::mpsc;

use crate::output::OutputQueue;
use crate::request_ids;

/// The transport rmcp serves on.
pub(crate) struct StdioTransport {
    inbound: mpsc::Receiver<ClientJsonRpcMessage>,
    output: OutputQueue,
}

impl StdioTransport {
    /// A transport reading what the relay forwards and writing to `output`.
    pub(crate) fn new(inbound: mpsc::Receiver<ClientJsonRpcMessage>, output: OutputQueue) -> Self {
        Self { inbound, output }
    }
}

impl Transport<RoleServer> for StdioTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        message: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let output = self.output.clone();
        async move {
            let place = output
                .reserve()
                .await
                .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "stdout is closed"))?;
            let mut line = serde_json::to_vec(&request_ids::outgoing(message))?;
            line.push(b'\n');
            place.send(line);
            Ok(())
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        self.inbound.recv().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inbound.close();
        Ok(())
    }
}
