//! A byte buffer that keeps the first and last bytes of a stream of any size.

/// Keeps the first `cap / 2` bytes and the most recent `cap / 2` bytes,
/// counting what was dropped in between, in constant memory.
#[derive(Debug, Clone)]
pub struct HeadTailBuffer {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    half: usize,
    dropped: u64,
    /// Newlines seen in everything pushed, dropped bytes included.
    newlines: u64,
    /// Whether the last byte pushed was a newline (or nothing was pushed).
    ends_with_newline: bool,
}

impl HeadTailBuffer {
    /// A buffer keeping at most `cap` bytes.
    pub fn new(cap: usize) -> Self {
        Self {
            head: Vec::new(),
            tail: std::collections::VecDeque::new(),
            half: cap / 2,
            dropped: 0,
            newlines: 0,
            ends_with_newline: true,
        }
    }

    /// Appends bytes, dropping from the middle once full.
    pub fn push(&mut self, mut bytes: &[u8]) {
        if let Some(&last) = bytes.last() {
            self.newlines += bytes.iter().filter(|&&b| b == b'\n').count() as u64;
            self.ends_with_newline = last == b'\n';
        }
        let head_room = self.half.saturating_sub(self.head.len());
        if head_room > 0 {
            let take = head_room.min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.is_empty() {
            return;
        }
        if bytes.len() >= self.half {
            self.dropped += (self.tail.len() + bytes.len() - self.half) as u64;
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.half..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.half);
        self.tail.drain(..overflow);
        self.dropped += overflow as u64;
        self.tail.extend(bytes);
    }

    /// Bytes dropped from the middle.
    pub fn dropped_bytes(&self) -> u64 {
        self.dropped
    }

    /// Bytes seen in total.
    pub fn total_bytes(&self) -> u64 {
        (self.head.len() + self.tail.len()) as u64 + self.dropped
    }

    /// Lines seen in total, counted like [`str::lines`]: a final line without a newline counts.
    pub fn total_lines(&self) -> u64 {
        self.newlines + u64::from(!self.ends_with_newline)
    }

    /// The kept bytes as text (lossy UTF-8), with a marker where bytes were dropped.
    pub fn to_text(&self) -> String {
        let (a, b) = self.tail.as_slices();
        if self.dropped == 0 {
            // Contiguous bytes: decode them together so no character is split.
            return String::from_utf8_lossy(&[self.head.as_slice(), a, b].concat()).into_owned();
        }
        let marker = format!(
            "\n[... {} bytes of output not captured ...]\n",
            self.dropped
        );
        // Sized once: this runs on up to 1 MiB per stream per command.
        let mut text = String::with_capacity(self.head.len() + marker.len() + a.len() + b.len());
        text.push_str(&String::from_utf8_lossy(&self.head));
        text.push_str(&marker);
        text.push_str(&String::from_utf8_lossy(&[a, b].concat()));
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_across_the_head_tail_seam_stays_whole() {
        let mut buf = HeadTailBuffer::new(4);
        buf.push("aé".as_bytes());
        assert_eq!(buf.to_text(), "aé");
    }

    #[test]
    fn small_input_is_kept_whole() {
        let mut buf = HeadTailBuffer::new(10);
        buf.push(b"abc");
        buf.push(b"de");
        assert_eq!(buf.to_text(), "abcde");
        assert_eq!(buf.dropped_bytes(), 0);
    }

    #[test]
    fn overflow_keeps_head_and_latest_tail() {
        let mut buf = HeadTailBuffer::new(6);
        for chunk in [b"abcd".as_slice(), b"efgh", b"ij"] {
            buf.push(chunk);
        }
        assert_eq!(buf.total_bytes(), 10);
        assert_eq!(buf.dropped_bytes(), 4);
        assert_eq!(buf.total_lines(), 1);
        assert_eq!(
            buf.to_text(),
            "abc\n[... 4 bytes of output not captured ...]\nhij"
        );
    }

    #[test]
    fn one_huge_chunk_keeps_its_last_bytes() {
        let mut buf = HeadTailBuffer::new(4);
        buf.push(b"0123456789");
        assert_eq!(buf.dropped_bytes(), 6);
        assert!(buf.to_text().starts_with("01\n") && buf.to_text().ends_with("\n89"));
    }

    #[test]
    fn line_count_covers_dropped_bytes() {
        let mut buf = HeadTailBuffer::new(4);
        buf.push(b"1\n2\n3\n");
        buf.push(b"4\n5");
        assert_eq!(buf.total_lines(), 5);
        buf.push(b"\n");
        assert_eq!(buf.total_lines(), 5);
        assert_eq!(HeadTailBuffer::new(4).total_lines(), 0);
    }
}
