//! JSON-RPC over WebSocket: one message per text frame each way, as Codex's app-server
//! serves it. The opening handshake is where [`Access`] decides who may connect (401
//! without the bearer token, 403 from a foreign `Origin`).
//!
//! A message over the limit cannot be answered in place: the WebSocket library refuses
//! it before its end has been read, so the connection cannot go on. The peer gets an
//! error saying why, then a close frame with code 1009 (message too big).

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::protocol::frame::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Error as WsError, Message, error::CapacityError};

use crate::access::Access;
use crate::frame::{Frame, Oversize};
use crate::output::{OutputQueue, QueueReceiver};
use crate::transport::{Limits, MessageTransport};

/// A byte stream a WebSocket can run on (a TCP connection).
pub trait Socket: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> Socket for S {}

type Incoming = SplitStream<WebSocketStream<Box<dyn SocketObject>>>;
type Outgoing = SplitSink<WebSocketStream<Box<dyn SocketObject>>, Message>;

/// Object-safe [`Socket`], so that readers of any socket have one type.
pub trait SocketObject: AsyncRead + AsyncWrite + Unpin + Send {}
impl<S: AsyncRead + AsyncWrite + Unpin + Send> SocketObject for S {}

/// Why a WebSocket connection was not opened.
#[derive(Debug, thiserror::Error)]
pub enum AcceptError {
    /// The opening handshake failed or was refused (the peer was told why).
    #[error("WebSocket handshake: {0}")]
    Handshake(#[from] WsError),
}

/// Runs the opening handshake on `socket`, refusing peers `access` does not let in,
/// and returns the connection's message transport.
pub async fn accept(
    socket: impl Socket,
    access: &Access,
    limits: Limits,
) -> Result<MessageTransport, AcceptError> {
    let config = WebSocketConfig::default()
        .max_message_size(Some(limits.max_message_bytes))
        .max_frame_size(Some(limits.max_message_bytes));
    #[allow(
        clippy::result_large_err,
        reason = "the WebSocket library's handshake callback returns its HTTP response type"
    )]
    let check = |request: &Request, response: Response| -> Result<Response, ErrorResponse> {
        match access.check(request.headers()) {
            Ok(()) => Ok(response),
            Err(refusal) => Err(refusal.http_response()),
        }
    };
    let socket: Box<dyn SocketObject> = Box::new(socket);
    let stream =
        tokio_tungstenite::accept_hdr_async_with_config(socket, check, Some(config)).await?;
    let (sink, frames) = stream.split();
    let (output, queued) = OutputQueue::new(limits.queue);
    let too_big = Arc::new(AtomicBool::new(false));
    let writer = tokio::spawn(write_frames(sink, queued, too_big.clone()));
    let reader = Reader {
        frames,
        too_big,
        ended: false,
    };
    Ok(MessageTransport::websocket(reader, output, writer))
}

/// The reading half of a WebSocket connection.
pub(crate) struct Reader {
    frames: Incoming,
    /// Set when a message over the limit ended the connection: the writer closes with 1009.
    too_big: Arc<AtomicBool>,
    ended: bool,
}

impl Reader {
    /// The next message; `None` once the peer closed (or the connection broke).
    pub(crate) async fn next(&mut self) -> io::Result<Option<Frame>> {
        while !self.ended {
            let Some(next) = self.frames.next().await else {
                break;
            };
            match next {
                Ok(Message::Text(text)) => return Ok(Some(Frame::Whole(text.as_bytes().to_vec()))),
                Ok(Message::Binary(bytes)) => return Ok(Some(Frame::Whole(bytes.to_vec()))),
                Ok(Message::Close(_)) => break,
                // Pings are answered by the library; pongs and raw frames say nothing.
                Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_)) => {}
                Err(WsError::Capacity(CapacityError::MessageTooLong { size, .. })) => {
                    self.ended = true;
                    self.too_big.store(true, Ordering::Release);
                    // Nothing of it was kept: the answer goes out without an id.
                    return Ok(Some(Frame::Oversize(Oversize {
                        head: Vec::new(),
                        tail: Vec::new(),
                        len: size as u64,
                    })));
                }
                Err(WsError::ConnectionClosed | WsError::AlreadyClosed) => break,
                Err(WsError::Io(err)) => return Err(err),
                Err(err) => {
                    tracing::debug!("the WebSocket connection failed: {err}");
                    break;
                }
            }
        }
        self.ended = true;
        Ok(None)
    }
}

/// Sends each queued message as one text frame; once the queue ends, closes the
/// connection (1009 when a message was too big, 1000 otherwise).
async fn write_frames(mut sink: Outgoing, mut queued: QueueReceiver, too_big: Arc<AtomicBool>) {
    while let Some(mut message) = queued.recv().await {
        let text = std::mem::take(&mut message.text);
        if let Err(err) = sink.send(Message::text(text)).await {
            tracing::debug!("the WebSocket peer is gone: {err}");
            return;
        }
    }
    let (code, reason) = if too_big.load(Ordering::Acquire) {
        (CloseCode::Size, "message too big")
    } else {
        (CloseCode::Normal, "")
    };
    let close = Message::Close(Some(CloseFrame {
        code,
        reason: reason.into(),
    }));
    let _ = sink.send(close).await;
    let _ = sink.close().await;
}
