//! The one writer of stdout, fed whole lines through a bounded queue.
//!
//! The queue is where backpressure starts: a client that stops reading fills the
//! pipe, then this queue; rmcp's sends then wait for a place (holding messages
//! already built, never new copies), and the input reader, which waits for room
//! before taking the next line, stops reading stdin.

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// How many lines may wait for stdout.
pub(crate) const OUTPUT_QUEUE_LINES: usize = 32;

/// How much is handed to the output at a time. One `exec_command_end` event can
/// carry megabytes; tokio's stdout copies what it is given into its own buffer,
/// so handing it over whole would add another copy of it.
const WRITE_CHUNK_BYTES: usize = 64 * 1024;

/// The output is gone (stdout closed or failed); nothing more can be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OutputClosed;

/// A handle for queueing lines to the writer.
#[derive(Clone)]
pub(crate) struct OutputQueue {
    lines: mpsc::Sender<Vec<u8>>,
}

impl OutputQueue {
    /// Queues one line (`\n` included), waiting while the queue is full.
    pub(crate) async fn send(&self, line: Vec<u8>) -> Result<(), OutputClosed> {
        self.lines.send(line).await.map_err(|_| OutputClosed)
    }

    /// Waits for a place in the queue and holds it, so a message is only
    /// serialized once it can be queued.
    pub(crate) async fn reserve(&self) -> Result<mpsc::Permit<'_, Vec<u8>>, OutputClosed> {
        self.lines.reserve().await.map_err(|_| OutputClosed)
    }

    /// Waits until the queue has a free place. Places are handed out in the order
    /// they were asked for, so this also waits for every send already waiting.
    pub(crate) async fn wait_for_room(&self) -> Result<(), OutputClosed> {
        self.reserve().await.map(drop)
    }
}

/// Starts the writer; it ends once every [`OutputQueue`] is dropped and the queue
/// is written out, or when `output` fails.
pub(crate) fn start_writer(
    output: impl AsyncWrite + Unpin + Send + 'static,
) -> (OutputQueue, JoinHandle<()>) {
    let (lines, queued) = mpsc::channel(OUTPUT_QUEUE_LINES);
    let writer = tokio::spawn(write_lines(queued, output));
    (OutputQueue { lines }, writer)
}

async fn write_lines(mut queued: mpsc::Receiver<Vec<u8>>, mut output: impl AsyncWrite + Unpin) {
    // Small lines waiting together go out in one write: each write to tokio's
    // stdout is a trip to a blocking thread, which a flood of small answers
    // would otherwise pay once per line.
    let mut batch = Vec::with_capacity(WRITE_CHUNK_BYTES);
    while let Some(first) = queued.recv().await {
        let mut next = Some(first);
        while let Some(line) = next {
            if batch.len() + line.len() > WRITE_CHUNK_BYTES {
                if write(&mut output, &batch).await.is_err() {
                    return;
                }
                batch.clear();
            }
            if line.len() > WRITE_CHUNK_BYTES {
                if write(&mut output, &line).await.is_err() {
                    return;
                }
            } else {
                batch.extend_from_slice(&line);
            }
            next = queued.try_recv().ok();
        }
        if write(&mut output, &batch).await.is_err() {
            return;
        }
        batch.clear();
        if let Err(err) = output.flush().await {
            tracing::debug!("stdout is gone: {err}");
            return;
        }
    }
}

/// Writes `bytes` a chunk at a time.
async fn write(output: &mut (impl AsyncWrite + Unpin), bytes: &[u8]) -> Result<(), OutputClosed> {
    for chunk in bytes.chunks(WRITE_CHUNK_BYTES) {
        if let Err(err) = output.write_all(chunk).await {
            tracing::debug!("stdout is gone: {err}");
            return Err(OutputClosed);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn lines_go_out_whole_and_in_order() {
        let (output, mut client) = tokio::io::duplex(1024);
        let (queue, writer) = start_writer(output);
        let big = format!("{}\n", "x".repeat(200_000));
        queue.send(b"one\n".to_vec()).await.unwrap();
        let reader = tokio::spawn(async move {
            let mut text = String::new();
            client.read_to_string(&mut text).await.map(|_| text)
        });
        queue.send(big.clone().into_bytes()).await.unwrap();
        queue.send(b"two\n".to_vec()).await.unwrap();
        drop(queue);
        writer.await.unwrap();
        assert_eq!(reader.await.unwrap().unwrap(), format!("one\n{big}two\n"));
    }

    // Paused time: a timeout fires only once every task is blocked, so "did not
    // complete" is a fact here, not a guess.
    #[tokio::test(start_paused = true)]
    async fn a_stalled_output_holds_at_most_the_queue() {
        use std::time::Duration;
        // Nobody reads `_client`: once the pipe and the queue are full, no place frees up.
        let (output, _client) = tokio::io::duplex(64);
        let (queue, _writer) = start_writer(output);
        // Lines big enough that the writer's batch holds one at most.
        let line = || vec![b'x'; 40_000];
        let mut queued = 0;
        while tokio::time::timeout(Duration::from_secs(1), queue.send(line()))
            .await
            .is_ok()
        {
            queued += 1;
            // The queue, the batch being written and the line in hand.
            assert!(queued <= OUTPUT_QUEUE_LINES + 2, "the queue is unbounded");
        }
        assert!(queued >= OUTPUT_QUEUE_LINES, "{queued}");
        let room = tokio::time::timeout(Duration::from_secs(1), queue.wait_for_room());
        assert!(
            room.await.is_err(),
            "room reported while the output is stalled"
        );
    }
}
