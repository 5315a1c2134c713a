//! One message as a transport delivers it, held within a size limit.
//!
//! A message is collected piece by piece (a line streaming in, an HTTP body arriving in
//! chunks); the limit is checked before each append, and past it the message is
//! discarded as it streams, keeping only its first and last few KiB so that its request
//! id can still be found and the request answered (see `oversize`).

/// How much of the start and of the end of an oversize message is kept. Clients put
/// the id near one end: first (serde, pydantic) or last (the TypeScript SDK).
pub const KEPT_EDGE_BYTES: usize = 4 * 1024;

/// One message from the peer.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A message within the limit (a line without its `\n`).
    Whole(Vec<u8>),
    /// A message over the limit, of which only the edges were kept.
    Oversize(Oversize),
}

/// What is known of a message that was too long to keep.
#[derive(Debug, PartialEq, Eq)]
pub struct Oversize {
    /// Its first [`KEPT_EDGE_BYTES`].
    pub head: Vec<u8>,
    /// Its last [`KEPT_EDGE_BYTES`] (fewer if less came past the head).
    pub tail: Vec<u8>,
    /// Its full length in bytes.
    pub len: u64,
}

/// Collects one message at a time, holding at most `limit` bytes of it.
#[derive(Debug)]
pub struct Collector {
    limit: usize,
    kept: Vec<u8>,
    over: Option<Oversize>,
}

impl Collector {
    /// A collector accepting messages of up to `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            kept: Vec::new(),
            over: None,
        }
    }

    /// The limit it was made with.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Whether nothing of the current message has come yet.
    pub fn is_empty(&self) -> bool {
        self.kept.is_empty() && self.over.is_none()
    }

    /// Appends the next piece of the current message.
    pub fn push(&mut self, data: &[u8]) {
        if let Some(over) = &mut self.over {
            over.len += data.len() as u64;
            // The limit may have been crossed in a short piece: the head still fills up
            // to its size from what follows.
            if over.head.len() < KEPT_EDGE_BYTES {
                let missing = (KEPT_EDGE_BYTES - over.head.len()).min(data.len());
                over.head.extend_from_slice(&data[..missing]);
            }
            keep_tail(&mut over.tail, data);
            return;
        }
        if self.kept.len() + data.len() <= self.limit {
            reserve_within(&mut self.kept, data.len(), self.limit);
            self.kept.extend_from_slice(data);
            return;
        }
        let len = (self.kept.len() + data.len()) as u64;
        let mut head = std::mem::take(&mut self.kept);
        let mut tail = Vec::new();
        keep_tail(
            &mut tail,
            &head[head.len().saturating_sub(KEPT_EDGE_BYTES)..],
        );
        keep_tail(&mut tail, data);
        // Extending only a short head: a full one has its capacity at the limit, and
        // growing it would reserve twice that.
        if head.len() < KEPT_EDGE_BYTES {
            let missing = (KEPT_EDGE_BYTES - head.len()).min(data.len());
            head.extend_from_slice(&data[..missing]);
        }
        head.truncate(KEPT_EDGE_BYTES);
        head.shrink_to_fit();
        self.over = Some(Oversize { head, tail, len });
    }

    /// Ends the current message and returns it; the collector is ready for the next.
    pub fn finish(&mut self) -> Frame {
        if let Some(over) = self.over.take() {
            return Frame::Oversize(over);
        }
        // Handed over whole: the next message starts a buffer of its own, so one large
        // message does not pin its memory for the rest of the connection.
        Frame::Whole(std::mem::take(&mut self.kept))
    }

    /// The capacity held for the current message (for tests of the bound).
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.kept.capacity()
    }
}

/// Makes room for `more` bytes without letting the capacity pass `limit` (plain
/// `extend` doubles, which could reserve twice the limit).
fn reserve_within(buffer: &mut Vec<u8>, more: usize, limit: usize) {
    let needed = buffer.len() + more;
    if needed > buffer.capacity() {
        let target = needed.max(buffer.capacity() * 2).min(limit).max(needed);
        buffer.reserve_exact(target - buffer.len());
    }
}

/// Appends `data` to `tail`, keeping only the last [`KEPT_EDGE_BYTES`].
fn keep_tail(tail: &mut Vec<u8>, data: &[u8]) {
    if data.len() >= KEPT_EDGE_BYTES {
        tail.clear();
        tail.extend_from_slice(&data[data.len() - KEPT_EDGE_BYTES..]);
        return;
    }
    let overflow = (tail.len() + data.len()).saturating_sub(KEPT_EDGE_BYTES);
    tail.drain(..overflow);
    tail.extend_from_slice(data);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_pushed_in_pieces_is_whole_within_the_limit_and_edges_past_it() {
        let mut collector = Collector::new(10);
        collector.push(b"abc");
        collector.push(b"def");
        assert_eq!(collector.finish(), Frame::Whole(b"abcdef".to_vec()));
        assert!(collector.is_empty());
        collector.push(b"0123456789");
        collector.push(b"abc");
        assert_eq!(
            collector.finish(),
            Frame::Oversize(Oversize {
                head: b"0123456789abc".to_vec(),
                tail: b"0123456789abc".to_vec(),
                len: 13,
            })
        );
        collector.push(b"next");
        assert_eq!(collector.finish(), Frame::Whole(b"next".to_vec()));
    }
}
