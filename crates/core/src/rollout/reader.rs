//! Reading a rollout back: every record in order, or a thread's history.
//!
//! A process killed mid-write leaves at most a torn last line; it is skipped
//! with a warning. An unreadable line elsewhere is skipped the same way, so a
//! damaged file still yields everything that can be read.

use std::collections::HashSet;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use deputy_protocol::{ResponseItem, ThreadEvent};
use tokio::sync::mpsc;

use super::event_index::{Chunk, EventIndex, read_runs};
use super::event_line::{
    LINE_HEAD, LineKind, decode_any_line, decode_event_line, decode_event_lines, line_kind,
};
use super::{RolloutError, RolloutItem, SessionMeta, TurnContextRecord};

/// Warnings kept per file before the rest are only counted.
const MAX_WARNINGS: usize = 20;

/// What the model reads for a call whose output the file never got.
pub(crate) const UNFINISHED_CALL_OUTPUT: &str =
    "aborted: the session stopped before this call finished";

/// Every readable record of a rollout, in file order.
#[derive(Debug, Clone)]
pub struct RolloutContents {
    /// The records.
    pub items: Vec<RolloutItem>,
    /// Lines that were skipped, and why.
    pub warnings: Vec<String>,
}

/// A thread rebuilt from its rollout.
#[derive(Debug, Clone)]
pub struct ResumedSession {
    /// The rollout file.
    pub path: PathBuf,
    /// The session's metadata.
    pub meta: SessionMeta,
    /// The model history, exactly as the thread last had it, plus
    /// [`ResumedSession::closed_calls`] at the end.
    pub history: Vec<ResponseItem>,
    /// How many turns were started.
    pub turns: usize,
    /// The settings the last turn ran with (a turn's overrides persist for later turns).
    pub last_turn_context: Option<TurnContextRecord>,
    /// The highest event `seq` in the file (0 when it holds no events): the log continues after it.
    pub last_seq: u64,
    /// Outputs added for function calls the file leaves unanswered (a turn cut
    /// short by a crash); the model API rejects a call without an output.
    pub closed_calls: Vec<ResponseItem>,
    /// Lines that were skipped, and why.
    pub warnings: Vec<String>,
    pub(crate) tail: Tail,
    /// Where the event lines are, for the recorder that continues the file (a last line
    /// without its newline counted with the newline it then gets).
    pub(crate) event_index: EventIndex,
}

/// The state of the file's end, so that appending continues on a clean line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tail {
    /// Ends with a newline (or is empty).
    Clean,
    /// The last line is whole but lacks its newline.
    MissingNewline,
    /// The last line is torn from this byte offset on.
    Torn(u64),
}

/// Reads every record of the rollout at `path`.
pub fn read_rollout(path: &Path) -> Result<RolloutContents, RolloutError> {
    let bytes = std::fs::read(path).map_err(|e| RolloutError::io(path, e))?;
    let mut items = Vec::new();
    let scan = scan(&bytes, path, EventLines::Decode, |item| items.push(item));
    Ok(RolloutContents {
        items,
        warnings: scan.warnings,
    })
}

/// Loads the rollout at `path` as a thread to resume.
pub fn load_rollout(path: &Path) -> Result<ResumedSession, RolloutError> {
    let bytes = std::fs::read(path).map_err(|e| RolloutError::io(path, e))?;
    resumed_from_bytes(&bytes, path)
}

/// The events of the rollout at `path` with `after < seq < before`, in file order.
/// Lines of other kinds are skipped without being decoded. To replay a long thread,
/// [`EventReplay`] does the same in parallel, a chunk at a time.
pub fn read_events(path: &Path, after: u64, before: u64) -> Result<Vec<ThreadEvent>, RolloutError> {
    let part = Part {
        start: 0,
        end: u64::MAX,
        after,
        before,
    };
    std::fs::File::open(path)
        .and_then(|file| part.decode(&file, &mut Vec::new()))
        .map_err(|e| RolloutError::io(path, e))
}

/// A replay of the events of a rollout with `after < seq < before`: the file is cut
/// into chunks that a few blocking threads (one per core, at most [`MAX_DECODERS`])
/// read and decode ahead, handed over in file order. What the rollout's [`EventIndex`]
/// covers is read by its runs of event lines, skipping what lies between them; the
/// rest line by line. Memory holds a few chunks, not
/// the whole file, and the first events can be used while later ones are decoded.
/// A replay nobody reads keeps its threads waiting, each with at most
/// [`CHUNKS_AHEAD`] chunks ready; dropping the replay stops them.
///
/// A chunk whose events were all handed out goes back to the thread that decoded it,
/// which drops its hold on them before decoding its next chunk: the events whose last
/// other holder is gone by then (a front door that sent them on) are freed by the thread
/// that allocated them. glibc frees another thread's block under that thread's arena
/// lock, which the decoder wants for its next allocation: freeing every event on the
/// reader's side made the replay of 100,000 events take about a third more CPU. A
/// thread's last chunks, handed out after it ended, are dropped by the reader.
#[derive(Debug)]
pub struct EventReplay {
    path: PathBuf,
    /// One per decoding thread: chunk `i` comes from `decoders[i % decoders.len()]`.
    decoders: Vec<Decoder>,
    next_chunk: usize,
    chunks: usize,
    /// The chunk being handed out (the last one received) and how much of it was.
    current: Vec<Arc<ThreadEvent>>,
    handed_out: usize,
}

/// The ends of one decoding thread's channels.
#[derive(Debug)]
struct Decoder {
    decoded: mpsc::Receiver<std::io::Result<Vec<Arc<ThreadEvent>>>>,
    /// Chunks handed out, for the thread to drop.
    used: std::sync::mpsc::Sender<Vec<Arc<ThreadEvent>>>,
}

/// Most threads one [`EventReplay`] decodes with.
const MAX_DECODERS: usize = 4;
/// The least a file holds per decoding thread.
const BYTES_PER_DECODER: u64 = 4 << 20;
/// The bytes of one chunk of an [`EventReplay`].
const CHUNK_BYTES: u64 = 256 << 10;
/// Decoded chunks each thread of an [`EventReplay`] may have ready before it waits.
const CHUNKS_AHEAD: usize = 2;

impl EventReplay {
    /// Starts replaying the events of the rollout at `path` with `after < seq < before`,
    /// reading what `index` covers by its runs of event lines. Must be called within a
    /// tokio runtime.
    pub(crate) fn start(
        path: &Path,
        index: EventIndex,
        after: u64,
        before: u64,
    ) -> Result<Self, RolloutError> {
        let len = std::fs::metadata(path)
            .map_err(|e| RolloutError::io(path, e))?
            .len();
        let decoders = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .min(MAX_DECODERS)
            .min(usize::try_from(len / BYTES_PER_DECODER).unwrap_or(usize::MAX))
            .max(1);
        Ok(Self::start_with(
            path,
            &index,
            len,
            (after, before),
            decoders,
            CHUNK_BYTES,
        ))
    }

    /// [`EventReplay::start`] for the first `len` bytes of the file (and the line
    /// running past them), `decoders` threads and chunks of `chunk_bytes`.
    pub(crate) fn start_with(
        path: &Path,
        index: &EventIndex,
        len: u64,
        (after, before): (u64, u64),
        decoders: usize,
        chunk_bytes: u64,
    ) -> Self {
        let plan: Arc<[Chunk]> = index.chunks(len, chunk_bytes).into();
        let runs: Arc<[Range<u64>]> = index.runs().into();
        let chunks = plan.len();
        let count = decoders.max(1).min(chunks);
        let decoders = (0..count)
            .map(|first| {
                let (tx, decoded) = mpsc::channel(CHUNKS_AHEAD);
                let (used, returned) = std::sync::mpsc::channel::<Vec<Arc<ThreadEvent>>>();
                let path = path.to_path_buf();
                let (plan, runs) = (plan.clone(), runs.clone());
                tokio::task::spawn_blocking(move || {
                    let file = match std::fs::File::open(&path) {
                        Ok(file) => file,
                        Err(err) => {
                            let _ = tx.blocking_send(Err(err));
                            return;
                        }
                    };
                    let mut buf = Vec::new();
                    for chunk in plan.iter().skip(first).step_by(count) {
                        returned.try_iter().for_each(drop);
                        let events = match chunk {
                            Chunk::Runs { runs: which, bytes } => Part {
                                start: bytes.start,
                                end: bytes.end,
                                after,
                                before,
                            }
                            .decode_runs(&file, &runs[which.clone()], &mut buf),
                            Chunk::Lines(bytes) => Part {
                                start: bytes.start,
                                end: bytes.end,
                                after,
                                before,
                            }
                            .decode(&file, &mut buf),
                        }
                        .map(|events| events.into_iter().map(Arc::new).collect());
                        if tx.blocking_send(events).is_err() {
                            break; // The replay was dropped.
                        }
                    }
                    // Not waiting for the chunks still out: a subscriber may stop reading
                    // at any point and keep the replay; those few are dropped where read.
                    returned.try_iter().for_each(drop);
                });
                Decoder { decoded, used }
            })
            .collect();
        Self {
            path: path.to_path_buf(),
            decoders,
            next_chunk: 0,
            chunks,
            current: Vec::new(),
            handed_out: 0,
        }
    }

    /// The next event, or `None` when every chunk was handed over. Cancel-safe: a
    /// cancelled call loses nothing.
    pub async fn next(&mut self) -> Option<Result<Arc<ThreadEvent>, RolloutError>> {
        loop {
            if let Some(event) = self.current.get(self.handed_out) {
                self.handed_out += 1;
                return Some(Ok(event.clone()));
            }
            self.give_back();
            if self.next_chunk >= self.chunks {
                return None;
            }
            let slot = self.next_chunk % self.decoders.len();
            let decoded = self.decoders[slot].decoded.recv().await;
            self.next_chunk += 1;
            match decoded {
                Some(Ok(events)) => {
                    self.current = events;
                    self.handed_out = 0;
                }
                Some(Err(err)) => return Some(Err(RolloutError::io(&self.path, err))),
                None => {
                    self.next_chunk = self.chunks;
                    return Some(Err(RolloutError::io(
                        &self.path,
                        std::io::Error::other("the thread decoding it stopped"),
                    )));
                }
            }
        }
    }

    /// Sends the chunk being handed out back to the thread that decoded it.
    fn give_back(&mut self) {
        let used = std::mem::take(&mut self.current);
        if !used.is_empty() {
            // It is chunk `next_chunk - 1`. A decoder that has ended leaves it to be
            // dropped here.
            let from = (self.next_chunk - 1) % self.decoders.len();
            let _ = self.decoders[from].used.send(used);
        }
    }
}

impl Drop for EventReplay {
    fn drop(&mut self) {
        self.give_back();
    }
}

/// Bytes read at a time within a part.
const READ_BYTES: u64 = 1 << 20;
/// Bytes first read to finish (or skip) a line that runs past a part's end; doubled at
/// each read up to [`READ_BYTES`]. Most lines are a few kilobytes: reading a mebibyte
/// to find the end of each part's last line had the kernel copy twice the file.
const TAIL_READ_BYTES: u64 = 4 << 10;

/// `*size`, doubled (up to [`READ_BYTES`]) for the next read.
fn grow(size: &mut u64) -> u64 {
    let now = *size;
    *size = (now * 2).min(READ_BYTES);
    now
}

/// The lines of a rollout that start in `start..end`, and which events of them to keep.
#[derive(Debug, Clone, Copy)]
struct Part {
    start: u64,
    end: u64,
    after: u64,
    before: u64,
}

impl Part {
    /// The events with `after < seq < before` on the lines that start in `start..end`:
    /// a line that runs past `end` is read to its end, and the line holding byte
    /// `start - 1` belongs to the part before. `buf` is scratch space.
    fn decode(self, file: &std::fs::File, buf: &mut Vec<u8>) -> std::io::Result<Vec<ThreadEvent>> {
        use std::io::{Read, Seek, SeekFrom};
        let mut file = file;
        // The file offset of `buf[0]`; the file is read on from `offset + buf.len()`.
        let mut offset = self.start.saturating_sub(1);
        file.seek(SeekFrom::Start(offset))?;
        let mut skip_line = self.start > 0;
        let mut events = Vec::new();
        let mut counted = false;
        // How much of `buf` is known to hold no newline: never searched twice.
        let mut searched = 0;
        // Read at a time past the part's end, doubling while one long line goes on.
        let mut tail_read = TAIL_READ_BYTES;
        buf.clear();
        loop {
            let read_to = offset + buf.len() as u64;
            let want = if read_to < self.end {
                (self.end - read_to).min(READ_BYTES)
            } else {
                grow(&mut tail_read)
            };
            let read = file.take(want).read_to_end(buf)?;
            if !counted {
                // At most one event per line: no growing (and copying) while decoding.
                events.reserve(memchr::memchr_iter(b'\n', buf).count());
                counted = true;
            }
            let mut used = 0;
            // Consecutive event lines to keep, decoded together (`buf[run]`, newlines included).
            let mut run = 0..0;
            let mut past_end = false;
            while let Some(newline) = memchr::memchr(b'\n', &buf[used.max(searched)..]) {
                let line = used..used.max(searched) + newline;
                let line_start = offset + used as u64;
                used = line.end + 1;
                if std::mem::take(&mut skip_line) {
                    continue;
                }
                if line_start >= self.end {
                    past_end = true;
                    break;
                }
                self.take_line(buf, line, &mut run, &mut events);
            }
            decode_event_lines(&buf[run], &mut events);
            if past_end {
                return Ok(events);
            }
            if skip_line && offset + buf.len() as u64 >= self.end {
                return Ok(events); // No line starts in the part.
            }
            if read == 0 {
                // A last line without its newline: whole or torn.
                if !skip_line && offset + (used as u64) < self.end {
                    self.keep(&buf[used..], &mut events);
                }
                return Ok(events);
            }
            // A long line not ended yet that is not kept (it belongs to the part before, or
            // its first bytes say it is no event): only its end is sought, nothing buffered.
            let rest = &buf[used..];
            if rest.len() >= LINE_HEAD && (skip_line || line_kind(rest) == LineKind::Other) {
                if offset + used as u64 >= self.end {
                    return Ok(events);
                }
                skip_line = false;
                offset += buf.len() as u64;
                if !skip_past_newline(file, buf, &mut offset, &mut tail_read)? || offset >= self.end
                {
                    return Ok(events);
                }
                searched = 0;
                continue;
            }
            buf.drain(..used);
            offset += used as u64;
            searched = buf.len();
        }
    }

    /// [`Part::decode`] for a part whose event lines are `runs` (of the rollout's
    /// [`EventIndex`]): only they are read, then decoded together. Where the file does not
    /// hold whole lines as the index says, the part is read line by line instead.
    fn decode_runs(
        self,
        file: &std::fs::File,
        runs: &[Range<u64>],
        buf: &mut Vec<u8>,
    ) -> std::io::Result<Vec<ThreadEvent>> {
        let Some(lines_start) = read_runs(file, runs, buf)? else {
            tracing::warn!(
                "a rollout does not hold the event lines its index gives in bytes {}..{}; \
                 reading them line by line",
                self.start,
                self.end
            );
            return self.decode(file, buf);
        };
        let mut events = Vec::with_capacity(memchr::memchr_iter(b'\n', buf).count());
        let mut run = lines_start..lines_start;
        let mut at = lines_start;
        while let Some(newline) = memchr::memchr(b'\n', &buf[at..]) {
            let line = at..at + newline;
            at = line.end + 1;
            self.take_line(buf, line, &mut run, &mut events);
        }
        decode_event_lines(&buf[run], &mut events);
        Ok(events)
    }

    /// Takes the whole line `buf[line]`, followed by its newline: an event line to keep
    /// joins `run`, the consecutive event lines that are decoded together once a line of
    /// another kind ends it (or the caller, at the end); other lines are kept as events
    /// when they decode as ones to keep.
    fn take_line(
        self,
        buf: &[u8],
        line: Range<usize>,
        run: &mut Range<usize>,
        events: &mut Vec<ThreadEvent>,
    ) {
        match line_kind(&buf[line.clone()]) {
            LineKind::Event(seq) if self.wanted(seq) => {
                if run.end != line.start {
                    decode_event_lines(&buf[run.clone()], events);
                    *run = line.start..line.start;
                }
                run.end = line.end + 1;
            }
            kind => {
                decode_event_lines(&buf[run.clone()], events);
                *run = line.end + 1..line.end + 1;
                self.keep_other(kind, &buf[line], events);
            }
        }
    }

    /// Whether the event `seq` is one the part keeps.
    fn wanted(self, seq: u64) -> bool {
        self.after < seq && seq < self.before
    }

    /// Adds the event on `line` (perhaps torn) to `events` if it is one with
    /// `after < seq < before`. A torn or unreadable line is skipped, as everywhere else.
    fn keep(self, line: &[u8], events: &mut Vec<ThreadEvent>) {
        match line_kind(line) {
            LineKind::Event(seq) if self.wanted(seq) => {
                events.extend(decode_event_line(line, events.last()).ok());
            }
            kind => self.keep_other(kind, line, events),
        }
    }

    /// [`Part::keep`] for a line that is not an event line to keep as deputy writes it.
    fn keep_other(self, kind: LineKind, line: &[u8], events: &mut Vec<ThreadEvent>) {
        // Not written the way deputy writes (reformatted by hand or by a tool): decoded
        // whole to find out (its ids are its own).
        if kind == LineKind::Unknown
            && let Ok(RolloutItem::Event(event)) = decode_any_line(line)
            && self.wanted(event.seq)
        {
            events.push(event);
        }
    }
}

/// Reads `file` on until past the next newline, keeping nothing before it: `buf` is left
/// holding what follows the newline, and `offset` (the file offset of the next byte read)
/// the offset of `buf[0]`. `false` when the file ends first.
fn skip_past_newline(
    file: &std::fs::File,
    buf: &mut Vec<u8>,
    offset: &mut u64,
    read_size: &mut u64,
) -> std::io::Result<bool> {
    use std::io::Read;
    loop {
        buf.clear();
        let read = file.take(grow(read_size)).read_to_end(buf)?;
        if read == 0 {
            return Ok(false);
        }
        if let Some(newline) = memchr::memchr(b'\n', buf) {
            buf.drain(..=newline);
            *offset += newline as u64 + 1;
            return Ok(true);
        }
        *offset += read as u64;
    }
}

/// Rebuilds a thread from a rollout's bytes.
pub(crate) fn resumed_from_bytes(
    bytes: &[u8],
    path: &Path,
) -> Result<ResumedSession, RolloutError> {
    let mut meta = None;
    let mut history = Vec::new();
    let mut turns = 0;
    let mut last_turn_context = None;
    let mut last_seq = 0;
    let mut seen_seq = 0;
    // Only an event's seq matters here: its line is not decoded.
    let mut seen = |seq: u64| seen_seq = seen_seq.max(seq);
    let scan = scan(
        bytes,
        path,
        EventLines::SeqOnly(&mut seen),
        |item| match item {
            RolloutItem::SessionMeta(m) => {
                meta.get_or_insert(m);
            }
            RolloutItem::ResponseItem(item) => history.push(item),
            // Everything before a compaction is replaced by what it left.
            RolloutItem::Compacted(compacted) => history = compacted.replacement_history,
            RolloutItem::TurnContext(context) => {
                turns += 1;
                last_turn_context = Some(context);
            }
            RolloutItem::Event(event) => last_seq = last_seq.max(event.seq),
            RolloutItem::EventMsg(_) => {}
        },
    );
    let meta = meta.ok_or_else(|| RolloutError::Corrupt {
        path: path.to_path_buf(),
        reason: "it has no readable session_meta line".into(),
    })?;
    let closed_calls = close_unanswered_calls(&history);
    history.extend(closed_calls.iter().cloned());
    Ok(ResumedSession {
        path: path.to_path_buf(),
        meta,
        history,
        turns,
        last_turn_context,
        last_seq: last_seq.max(seen_seq),
        closed_calls,
        warnings: scan.warnings,
        tail: scan.tail,
        event_index: scan.index,
    })
}

/// Outputs for every tool call in `history` that has none, in call order.
fn close_unanswered_calls(history: &[ResponseItem]) -> Vec<ResponseItem> {
    let answered: HashSet<&str> = history
        .iter()
        .filter_map(ResponseItem::answered_call_id)
        .collect();
    history
        .iter()
        .filter_map(ResponseItem::tool_call)
        .filter(|(call_id, _)| !answered.contains(call_id))
        .map(|(call_id, kind)| kind.output(call_id.to_string(), UNFINISHED_CALL_OUTPUT.into()))
        .collect()
}

struct Scan {
    warnings: Vec<String>,
    tail: Tail,
    /// Where the event lines are (see [`ResumedSession::event_index`]).
    index: EventIndex,
}

/// What [`scan`] does with the `event` lines it meets.
enum EventLines<'a> {
    /// Decodes them, as any other line.
    Decode,
    /// Hands only their seq to the function, without decoding them; a last line
    /// without its newline, perhaps torn, is still decoded.
    SeqOnly(&'a mut dyn FnMut(u64)),
}

/// Parses each line of `bytes`, handing readable records to `visit`.
fn scan(
    bytes: &[u8],
    path: &Path,
    mut events: EventLines<'_>,
    mut visit: impl FnMut(RolloutItem),
) -> Scan {
    let mut warnings = Vec::new();
    let mut skipped = 0usize;
    let mut tail = Tail::Clean;
    let mut index = EventIndex::default();
    let mut offset = 0usize;
    let mut number = 0usize;
    while offset < bytes.len() {
        number += 1;
        let (line, terminated) = match memchr::memchr(b'\n', &bytes[offset..]) {
            Some(end) => (&bytes[offset..offset + end], true),
            None => (&bytes[offset..], false),
        };
        let start = offset;
        offset += line.len() + usize::from(terminated);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        // With the newline a last line without one gets when the file is continued.
        let line_range = start as u64..(start + line.len() + 1) as u64;
        let item = match (&mut events, line_kind(line)) {
            (EventLines::SeqOnly(seen), LineKind::Event(seq)) if terminated => {
                seen(seq);
                index.event_line(line_range);
                continue;
            }
            (_, LineKind::Event(_)) => decode_event_line(line, None).map(RolloutItem::Event),
            (_, LineKind::Other) => serde_json::from_slice::<RolloutItem>(line),
            (_, LineKind::Unknown) => decode_any_line(line),
        };
        match item {
            Ok(item) => {
                if matches!(item, RolloutItem::Event(_)) {
                    index.event_line(line_range);
                }
                visit(item);
                if !terminated {
                    tail = Tail::MissingNewline;
                }
            }
            Err(err) => {
                skipped += 1;
                let message = if terminated {
                    format!(
                        "{}: skipped unreadable line {number}: {err}",
                        path.display()
                    )
                } else {
                    tail = Tail::Torn(start as u64);
                    format!(
                        "{}: skipped a torn last line ({number}, {} bytes): the process writing it was stopped mid-write",
                        path.display(),
                        line.len()
                    )
                };
                if warnings.len() < MAX_WARNINGS {
                    warnings.push(message);
                }
            }
        }
    }
    index.cover(match tail {
        Tail::Clean => bytes.len() as u64,
        Tail::MissingNewline => bytes.len() as u64 + 1,
        Tail::Torn(at) => at,
    });
    index.shrink_to_fit();
    if skipped > warnings.len() {
        warnings.push(format!(
            "{}: {} more unreadable lines skipped",
            path.display(),
            skipped - warnings.len()
        ));
    }
    Scan {
        warnings,
        tail,
        index,
    }
}

#[cfg(test)]
mod tests;
