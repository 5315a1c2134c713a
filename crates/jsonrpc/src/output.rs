//! The one writer of a connection's output, fed whole messages through a queue bounded
//! in messages and in bytes.
//!
//! The queue is where backpressure starts: a peer that stops reading fills the pipe or
//! socket, then this queue; senders then wait for a place (holding messages already
//! built, never new copies), and a reader that waits for room before taking the next
//! message ([`OutputQueue::wait_for_room`]) stops reading its input.

use std::sync::Arc;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinHandle;

/// How much is handed to a byte stream at a time. One `exec_command_end` event can
/// carry megabytes; tokio's stdout copies what it is given into its own buffer, so
/// handing it over whole would add another copy of it.
const WRITE_CHUNK_BYTES: usize = 64 * 1024;

/// The output is gone (closed or failed); nothing more can be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the connection's output is closed")]
pub struct OutputClosed;

/// How much may wait to be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueBounds {
    /// Messages.
    pub messages: usize,
    /// Bytes of messages (one larger message waits alone).
    pub bytes: usize,
}

/// One message waiting to be written (JSON, no newline), holding its share of the
/// byte budget until it is written.
#[derive(Debug)]
pub struct Queued {
    /// The message.
    pub text: String,
    _budget: OwnedSemaphorePermit,
}

/// A handle for queueing messages to the writer; cheap to clone.
#[derive(Debug, Clone)]
pub struct OutputQueue {
    messages: mpsc::Sender<Queued>,
    budget: Arc<Semaphore>,
    budget_bytes: usize,
}

/// The receiving end of an [`OutputQueue`], for the writer.
#[derive(Debug)]
pub struct QueueReceiver(mpsc::Receiver<Queued>);

impl QueueReceiver {
    /// The next message; `None` once every [`OutputQueue`] is gone and the queue is empty.
    pub async fn recv(&mut self) -> Option<Queued> {
        self.0.recv().await
    }

    /// The next message if one waits now.
    pub fn try_recv(&mut self) -> Option<Queued> {
        self.0.try_recv().ok()
    }
}

/// A place in the queue, taken before a message is built (see [`OutputQueue::reserve`]).
#[derive(Debug)]
pub struct Place<'a> {
    permit: mpsc::Permit<'a, Queued>,
    queue: &'a OutputQueue,
}

impl Place<'_> {
    /// Queues `text` in this place once its bytes fit the budget.
    pub async fn send(self, text: String) -> Result<(), OutputClosed> {
        let budget = self.queue.take_budget(text.len()).await?;
        self.permit.send(Queued {
            text,
            _budget: budget,
        });
        Ok(())
    }
}

impl OutputQueue {
    /// A queue with these bounds and its receiving end.
    pub fn new(bounds: QueueBounds) -> (Self, QueueReceiver) {
        let (messages, queued) = mpsc::channel(bounds.messages.max(1));
        let budget_bytes = bounds
            .bytes
            .clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize));
        let queue = Self {
            messages,
            budget: Arc::new(Semaphore::new(budget_bytes)),
            budget_bytes,
        };
        (queue, QueueReceiver(queued))
    }

    /// Queues one message (JSON, no newline), waiting while the queue is full.
    pub async fn send(&self, text: String) -> Result<(), OutputClosed> {
        self.reserve().await?.send(text).await
    }

    /// Waits for a place in the queue and holds it, so that a message is only built
    /// once it can be queued.
    pub async fn reserve(&self) -> Result<Place<'_>, OutputClosed> {
        let permit = self.messages.reserve().await.map_err(|_| OutputClosed)?;
        Ok(Place {
            permit,
            queue: self,
        })
    }

    /// Waits until the queue has a free place. Places are handed out in the order they
    /// were asked for, so this also waits for every send already waiting.
    pub async fn wait_for_room(&self) -> Result<(), OutputClosed> {
        self.messages
            .reserve()
            .await
            .map(drop)
            .map_err(|_| OutputClosed)
    }

    /// Whether the writer has stopped (the output closed or failed).
    pub fn is_closed(&self) -> bool {
        self.messages.is_closed()
    }

    async fn take_budget(&self, len: usize) -> Result<OwnedSemaphorePermit, OutputClosed> {
        let wanted = u32::try_from(len.clamp(1, self.budget_bytes)).unwrap_or(u32::MAX);
        // Fails only if the budget is closed, which nothing does.
        self.budget
            .clone()
            .acquire_many_owned(wanted)
            .await
            .map_err(|_| OutputClosed)
    }
}

/// Starts the writer of newline-delimited messages to `output`; it ends once every
/// [`OutputQueue`] is dropped and the queue is written out, or when `output` fails.
pub fn start_line_writer(
    output: impl AsyncWrite + Unpin + Send + 'static,
    bounds: QueueBounds,
) -> (OutputQueue, JoinHandle<()>) {
    let (queue, queued) = OutputQueue::new(bounds);
    let writer = tokio::spawn(write_lines(queued, output));
    (queue, writer)
}

async fn write_lines(mut queued: QueueReceiver, mut output: impl AsyncWrite + Unpin) {
    // Small messages waiting together go out in one write: each write to tokio's stdout
    // is a trip to a blocking thread, which a flood of small answers would otherwise
    // pay once per line.
    let mut batch = Vec::with_capacity(WRITE_CHUNK_BYTES);
    while let Some(first) = queued.recv().await {
        let mut next = Some(first);
        while let Some(message) = next {
            let line = message.text.as_bytes();
            if batch.len() + line.len() + 1 > WRITE_CHUNK_BYTES {
                if write(&mut output, &batch).await.is_err() {
                    return;
                }
                batch.clear();
            }
            if line.len() + 1 > WRITE_CHUNK_BYTES {
                if write(&mut output, line).await.is_err()
                    || write(&mut output, b"\n").await.is_err()
                {
                    return;
                }
            } else {
                batch.extend_from_slice(line);
                batch.push(b'\n');
            }
            // Its share of the budget is released here, once it is written or batched.
            drop(message);
            next = queued.try_recv();
        }
        if write(&mut output, &batch).await.is_err() {
            return;
        }
        batch.clear();
        if let Err(err) = output.flush().await {
            tracing::debug!("the output is gone: {err}");
            return;
        }
    }
}

/// Writes `bytes` a chunk at a time.
async fn write(output: &mut (impl AsyncWrite + Unpin), bytes: &[u8]) -> Result<(), OutputClosed> {
    for chunk in bytes.chunks(WRITE_CHUNK_BYTES) {
        if let Err(err) = output.write_all(chunk).await {
            tracing::debug!("the output is gone: {err}");
            return Err(OutputClosed);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::io::AsyncReadExt;

    const ROOMY: QueueBounds = QueueBounds {
        messages: 32,
        bytes: usize::MAX,
    };

    #[tokio::test]
    async fn messages_go_out_one_per_line_whole_and_in_order() {
        let (output, mut peer) = tokio::io::duplex(1024);
        let (queue, writer) = start_line_writer(output, ROOMY);
        let big = "x".repeat(200_000);
        queue.send("one".into()).await.unwrap();
        let reader = tokio::spawn(async move {
            let mut text = String::new();
            peer.read_to_string(&mut text).await.map(|_| text)
        });
        queue.send(big.clone()).await.unwrap();
        queue.send("two".into()).await.unwrap();
        drop(queue);
        writer.await.unwrap();
        assert_eq!(reader.await.unwrap().unwrap(), format!("one\n{big}\ntwo\n"));
    }

    // Paused time: a timeout fires only once every task is blocked, so "did not
    // complete" is a fact here, not a guess.
    #[tokio::test(start_paused = true)]
    async fn a_stalled_output_holds_at_most_the_queue() {
        // Nobody reads `_peer`: once the pipe and the queue are full, no place frees up.
        let (output, _peer) = tokio::io::duplex(64);
        let (queue, _writer) = start_line_writer(output, ROOMY);
        // Messages big enough that the writer's batch holds one at most.
        let message = || "x".repeat(40_000);
        let mut queued = 0;
        while tokio::time::timeout(Duration::from_secs(1), queue.send(message()))
            .await
            .is_ok()
        {
            queued += 1;
            // The queue, the batch being written and the message in hand.
            assert!(queued <= ROOMY.messages + 2, "the queue is unbounded");
        }
        assert!(queued >= ROOMY.messages, "{queued}");
        let room = tokio::time::timeout(Duration::from_secs(1), queue.wait_for_room());
        assert!(
            room.await.is_err(),
            "room reported while the output is stalled"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_byte_budget_holds_messages_back_until_earlier_ones_are_written() {
        let (queue, mut queued) = OutputQueue::new(QueueBounds {
            messages: 16,
            bytes: 64,
        });
        queue.send("x".repeat(40)).await.unwrap();
        // Over half the budget each: the second waits until the first is taken.
        let second = tokio::time::timeout(Duration::from_secs(1), queue.send("y".repeat(40)));
        assert!(second.await.is_err(), "the byte budget was not enforced");
        let first = queued.recv().await.unwrap();
        assert_eq!(first.text.len(), 40);
        drop(first);
        queue.send("y".repeat(40)).await.unwrap();
        assert_eq!(queued.recv().await.unwrap().text, "y".repeat(40));
    }
}
