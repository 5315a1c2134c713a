//! The stdio transport under abuse: oversize lines, a client that never reads, and
//! messages that must not be answered or must be answered exactly.

use std::time::Duration;

use deputy_test_support::{McpSession, MockModelServer, ProcessMemory, StdioClient, TestHome};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::harness::{DEPUTY, EXIT_WAIT, Mcp, WAIT};

/// The server's limit on one message (`MAX_LINE_BYTES`).
const LINE_LIMIT: u64 = 16 * 1024 * 1024;

const MIB: u64 = 1024 * 1024;

/// How long a background write may take before the test gives up on it.
const WRITE_WAIT: Duration = Duration::from_secs(60);

fn memory(client: &StdioClient) -> ProcessMemory {
    ProcessMemory::of(client.pid()).unwrap_or_else(|err| panic!("{err}"))
}

/// `chunks` of `size` bytes of `x`, `count` of them, streamed without building them all.
fn filler(count: usize, size: usize) -> impl Iterator<Item = Vec<u8>> + Send + 'static {
    (0..count).map(move |_| vec![b'x'; size])
}

#[test]
fn a_200_mib_request_is_answered_under_its_id_and_costs_about_the_limit() {
    let mcp = Mcp::start();
    let before = memory(&mcp.client);
    let head = br#"{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"codex","arguments":{"prompt":""#;
    let tail = b"\"}}}\n";
    let chunks = std::iter::once(head.to_vec())
        .chain(filler(200, MIB as usize))
        .chain(std::iter::once(tail.to_vec()));
    let write = mcp
        .client
        .write_in_background(chunks)
        .expect("start writing");
    write.wait(WRITE_WAIT).unwrap_or_else(|err| panic!("{err}"));

    let answer = mcp
        .client
        .wait_response("big", WAIT)
        .unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("16 MiB"), "{message}");
    let ping = mcp.client.request("ping", Value::Null);
    assert_eq!(mcp.result(ping), json!({}));
    assert_eq!(
        mcp.model.request_count(),
        0,
        "the oversize call must not run"
    );

    // Reading 200 MiB used to cost 1.4 GiB; now the line is held up to the limit
    // and discarded as it streams.
    let peak = memory(&mcp.client).peak_resident;
    let growth = peak.saturating_sub(before.peak_resident);
    assert!(
        growth < 2 * LINE_LIMIT,
        "peak memory grew by {} MiB reading one oversize line (peak {} MiB)",
        growth / MIB,
        peak / MIB
    );
}

#[test]
fn a_request_just_over_the_limit_is_answered_when_its_id_comes_last() {
    // The TypeScript SDK writes `id` after `params`; only the line's end tells it.
    let mcp = Mcp::start();
    let head = br#"{"method":"tools/call","params":{"name":"codex","arguments":{"prompt":""#;
    let tail = br#""}},"jsonrpc":"2.0","id":41}"#;
    let prompt_len = LINE_LIMIT as usize + 1 - head.len() - tail.len() + 1;
    let mut line = head.to_vec();
    line.resize(head.len() + prompt_len, b'x');
    line.extend_from_slice(tail);
    line.push(b'\n');
    let write = mcp
        .client
        .write_in_background(std::iter::once(line))
        .expect("start writing");
    write.wait(WRITE_WAIT).unwrap_or_else(|err| panic!("{err}"));

    let answer = mcp
        .client
        .wait_response(41, WAIT)
        .unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    let ping = mcp.client.request("ping", Value::Null);
    assert_eq!(mcp.result(ping), json!({}));
}

#[test]
fn a_client_that_does_not_read_stops_the_server_reading_and_gets_every_answer_later() {
    const PINGS: usize = 50_000;
    const PER_WRITE: usize = 1_000;
    let mcp = Mcp::start();
    let before = memory(&mcp.client);
    mcp.client.pause_reading();
    let chunks = (0..PINGS / PER_WRITE).map(|batch| {
        let mut bytes = Vec::new();
        for n in 0..PER_WRITE {
            let id = 1_000_000 + batch * PER_WRITE + n;
            bytes.extend_from_slice(
                format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n").as_bytes(),
            );
        }
        bytes
    });
    let write = mcp
        .client
        .write_in_background(chunks)
        .expect("start writing");

    // Only when to start reading is judged by a quiet spell; the assertions below
    // hold whenever reading starts.
    let finished = write.wait_until_finished_or_stalled(Duration::from_secs(1), WRITE_WAIT);
    let stalled_at = write.bytes_written();
    let held = memory(&mcp.client);
    assert!(
        !finished,
        "all {PINGS} pings ({stalled_at} bytes) were taken while nothing was read: \
         the server buffers without bound"
    );
    mcp.client.resume_reading();
    write.wait(WRITE_WAIT).unwrap_or_else(|err| panic!("{err}"));
    let last = 1_000_000 + PINGS - 1;
    mcp.client
        .wait_response(last, WRITE_WAIT)
        .unwrap_or_else(|err| panic!("{err}"));

    let answered: std::collections::HashSet<u64> = mcp
        .client
        .messages()
        .iter()
        .filter(|m| m["result"] == json!({}))
        .filter_map(|m| m["id"].as_u64())
        .filter(|id| *id >= 1_000_000)
        .collect();
    assert_eq!(
        answered.len(),
        PINGS,
        "every ping is answered once reading resumes"
    );
    // The flood used to cost 1.2 GiB by the time it was all written.
    let peak = memory(&mcp.client).peak_resident;
    let growth = peak.saturating_sub(before.peak_resident);
    assert!(
        growth < 16 * MIB,
        "peak memory grew by {} MiB for a client that did not read (resident {} MiB \
         when the writes stalled after {stalled_at} bytes)",
        growth / MIB,
        held.resident / MIB
    );
}

#[test]
fn a_notification_with_malformed_params_gets_no_answer() {
    let mcp = Mcp::start();
    mcp.client
        .notify("notifications/cancelled", json!("not an object"));
    mcp.client.notify("notifications/initialized", json!(5));
    let ping = mcp.client.request("ping", Value::Null);
    assert_eq!(mcp.result(ping), json!({}));
    let errors: Vec<Value> = mcp
        .client
        .messages()
        .into_iter()
        .filter(|m| m.get("error").is_some())
        .collect();
    assert_eq!(errors, Vec::<Value>::new());
}

#[test]
fn ids_beyond_64_bits_are_echoed_exactly_as_written() {
    // Not `Mcp`: its stdout check parses every line into a `Value`, which cannot
    // hold `1e400`.
    let model = MockModelServer::start();
    let home = TestHome::new(&model.base_url());
    let mut command = home.command(DEPUTY);
    command.arg("mcp-server").env("HOME", home.path());
    let client = StdioClient::spawn(command);
    McpSession::initialize(&client, json!({}));
    // 1e23 as a float would come back as `1e23`; 1e400 as no number at all.
    let ids = [
        "18446744073709551616",
        "100000000000000000000000",
        "-9223372036854775809",
        "1e400",
    ];
    for id in ids {
        client.send_raw(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#));
    }
    let ping = client.request("ping", Value::Null);
    let answer = client
        .wait_response(ping, WAIT)
        .unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(answer["result"], json!({}));
    let lines = client.lines();
    for id in ids {
        let prefix = format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32600,"#);
        assert!(
            lines.iter().any(|line| line.starts_with(&prefix)),
            "no -32600 echoing id {id}: {lines:#?}"
        );
    }
    client.close_stdin();
    assert!(
        client.wait_exit(EXIT_WAIT).is_some(),
        "the server did not exit"
    );
}

/// The comm names of the threads of process `pid`; a thread that ends while they are read
/// (the sandbox probe's, once it is done) is left out.
fn thread_names(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("list the server's threads")
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("comm")).ok())
        .map(|comm| comm.trim().to_string())
        .collect()
}

#[test]
fn a_server_on_pipes_holds_no_thread_to_wait_on_them() {
    // Piped stdin and stdout are driven by the runtime's one thread: no blocking-pool
    // thread waits in a read of stdin or took a write to stdout. Only the main thread
    // and the start-up sandbox probe (which ends by itself) may run.
    let mcp = Mcp::start();
    let ping = mcp.client.request("ping", Value::Null);
    assert_eq!(mcp.result(ping), json!({}));
    let names = thread_names(mcp.client.pid());
    assert!(
        names
            .iter()
            .all(|name| name == "deputy" || name == "sandbox-probe"),
        "threads of an idle server: {names:?}"
    );
}

/// Whether the open file behind `fd` is in non-blocking mode.
fn non_blocking(fd: &impl std::os::fd::AsRawFd) -> bool {
    // SAFETY: F_GETFL only reads the flags of an open descriptor.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    assert!(flags >= 0, "F_GETFL failed");
    flags & libc::O_NONBLOCK != 0
}

#[test]
fn the_stdout_pipe_is_blocking_again_once_the_server_exits() {
    use std::io::{BufRead, Write};
    use std::process::Stdio;

    let model = MockModelServer::start();
    let home = TestHome::new(&model.base_url());
    let (reader, writer) = std::io::pipe().expect("pipe");
    // Our copy shares the open file with the server's stdout, and so its mode.
    let ours = writer.try_clone().expect("copy the write end");
    let mut child = home
        .command(DEPUTY)
        .arg("mcp-server")
        .stdin(Stdio::piped())
        .stdout(writer)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the server");
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":1,"method":"ping"}}"#).expect("send ping");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::BufReader::new(reader).read_line(&mut line);
        let _ = tx.send(line);
    });
    let answer = rx.recv_timeout(WAIT).expect("no answer to ping");
    assert!(answer.contains(r#""id":1"#), "{answer}");
    assert!(
        non_blocking(&ours),
        "the server writes its pipe non-blocking"
    );

    drop(stdin);
    let deadline = std::time::Instant::now() + EXIT_WAIT;
    while child.try_wait().expect("wait").is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "the server did not exit"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        !non_blocking(&ours),
        "the pipe was left non-blocking for whoever writes it next"
    );
}

/// Started with stderr closed, the server has /dev/null there: no file or socket it opens
/// later takes descriptor 2 and gets its log lines (std's start-up did this; deputy starts
/// at its own `main`).
#[test]
fn a_closed_standard_descriptor_is_dev_null_not_the_next_file_opened() {
    use std::os::unix::process::CommandExt;

    let mcp = Mcp::spawn_with(&["mcp-server"], |command| {
        // SAFETY: close(2) is async-signal-safe; it runs after the child's stdio is set up.
        unsafe {
            command.pre_exec(|| {
                libc::close(2);
                Ok(())
            });
        }
    });
    McpSession::initialize(&mcp.client, json!({}));
    let stderr = std::fs::read_link(format!("/proc/{}/fd/2", mcp.client.pid()))
        .expect("the server's descriptor 2");
    assert_eq!(stderr, std::path::Path::new("/dev/null"));
}
