use std::time::Duration;

use deputy_protocol::ExecOutputStream;
use tokio_util::sync::CancellationToken;

use super::*;

fn request(script: &str, timeout: Duration) -> ExecRequest {
    ExecRequest {
        argv: vec!["bash".into(), "-c".into(), script.into()],
        cwd: std::env::temp_dir(),
        timeout,
        env: std::env::vars().collect::<Vec<_>>().into(),
        supervised: false,
    }
}

fn pid_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(pid, 0) == 0 }
}

#[tokio::test]
async fn captures_both_streams_and_exit_code() {
    let mut deltas = Vec::new();
    let out = run_command(
        &request("echo out; echo err >&2; exit 3", Duration::from_secs(5)),
        &CancellationToken::new(),
        |stream, bytes| deltas.push((stream, bytes.to_vec())),
    )
    .await
    .unwrap();
    assert_eq!(out.exit_code, 3);
    assert_eq!(out.stdout.to_text(), "out\n");
    assert_eq!(out.stderr.to_text(), "err\n");
    assert!(deltas.contains(&(ExecOutputStream::Stdout, b"out\n".to_vec())));
    assert!(deltas.contains(&(ExecOutputStream::Stderr, b"err\n".to_vec())));
}

#[tokio::test]
async fn timeout_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("grandchild.pid");
    let script = format!("sleep 30 & echo $! > {}; wait", pidfile.display());
    let out = run_command(
        &request(&script, Duration::from_millis(300)),
        &CancellationToken::new(),
        |_, _| {},
    )
    .await
    .unwrap();
    assert!(out.timed_out);
    assert_eq!(out.exit_code, TIMEOUT_EXIT_CODE);
    let grandchild: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SIGKILL was sent to the group before run_command returned; the kernel
    // finishes the kill asynchronously, and the zombie may linger until init
    // reaps it. Wait (bounded) for the process to stop running.
    let gone = || {
        let state = std::fs::read_to_string(format!("/proc/{grandchild}/stat")).unwrap_or_default();
        !pid_alive(grandchild) || state.contains(") Z") || state.contains(") X")
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !gone() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        gone(),
        "grandchild {grandchild} still running after its group was killed"
    );
}

#[tokio::test]
async fn background_child_holding_pipes_does_not_stall() {
    let out = run_command(
        &request("sleep 30 & echo started", Duration::from_secs(20)),
        &CancellationToken::new(),
        |_, _| {},
    )
    .await
    .unwrap();
    assert_eq!(out.exit_code, 0);
    assert!(!out.timed_out);
    assert!(out.duration < Duration::from_secs(5), "{:?}", out.duration);
    assert_eq!(out.stdout.to_text(), "started\n");
}

#[tokio::test]
async fn cancel_kills_the_command() {
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let handle = tokio::spawn(async move {
        run_command(
            &request("echo go; sleep 30", Duration::from_secs(60)),
            &cancel,
            |_, _| trigger.cancel(),
        )
        .await
    });
    let result = tokio::time::timeout(Duration::from_secs(5), handle)
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(result, Err(ExecError::Cancelled)));
}

#[tokio::test]
async fn huge_output_is_capped_and_deltas_stop_at_the_cap() {
    let mut streamed = 0usize;
    let out = run_command(
        &request(
            "head -c 5000000 /dev/zero | tr '\\0' 'x'",
            Duration::from_secs(20),
        ),
        &CancellationToken::new(),
        |_, bytes| streamed += bytes.len(),
    )
    .await
    .unwrap();
    assert_eq!(out.exit_code, 0);
    assert_eq!(out.stdout.total_bytes(), 5_000_000);
    assert_eq!(
        out.stdout.dropped_bytes(),
        5_000_000 - CAPTURE_CAP_BYTES as u64
    );
    assert_eq!(streamed, DELTA_CAP_BYTES);
}

#[tokio::test]
async fn missing_program_is_a_spawn_error() {
    let req = ExecRequest {
        argv: vec!["definitely-not-a-program-xyz".into()],
        cwd: std::env::temp_dir(),
        timeout: Duration::from_secs(1),
        env: std::env::vars().collect::<Vec<_>>().into(),
        supervised: false,
    };
    let err = run_command(&req, &CancellationToken::new(), |_, _| {})
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("definitely-not-a-program-xyz"),
        "{err}"
    );
}

#[tokio::test]
async fn missing_working_directory_is_named_not_blamed_on_the_program() {
    let mut req = request("true", Duration::from_secs(5));
    req.cwd = std::env::temp_dir().join("deputy-no-such-dir-for-this-test");
    let err = run_command(&req, &CancellationToken::new(), |_, _| {})
        .await
        .unwrap_err();
    assert!(matches!(err, ExecError::MissingWorkdir(_)), "{err}");
    assert!(err.to_string().contains("deputy-no-such-dir-for-this-test"));
}

#[tokio::test]
async fn runs_in_a_session_of_its_own() {
    // Field 6 of /proc/<pid>/stat is the session id: the shell leads its own session.
    let out = run_command(
        &request(
            "set -- $(sed 's/.*) //' /proc/$$/stat); test \"$4\" = \"$$\" && echo leader",
            Duration::from_secs(5),
        ),
        &CancellationToken::new(),
        |_, _| {},
    )
    .await
    .unwrap();
    assert_eq!(out.stdout.to_text(), "leader\n");
}

#[tokio::test]
async fn a_command_ignoring_sigterm_is_killed_after_the_grace_period() {
    let started = std::time::Instant::now();
    let out = run_command(
        &request(
            "trap '' TERM; echo armed; sleep 30",
            Duration::from_millis(300),
        ),
        &CancellationToken::new(),
        |_, _| {},
    )
    .await
    .unwrap();
    assert!(out.timed_out);
    assert_eq!(out.stdout.to_text(), "armed\n");
    let took = started.elapsed();
    assert!(
        took >= STOP_GRACE,
        "stopped before the grace period: {took:?}"
    );
    assert!(took < STOP_GRACE + Duration::from_secs(5), "took {took:?}");
}

#[tokio::test]
async fn dropping_the_future_stops_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("shell.pid");
    let script = format!("echo $$ > {}; echo go; sleep 30", pidfile.display());
    let (started_tx, started_rx) = tokio::sync::oneshot::channel();
    let mut started_tx = Some(started_tx);
    let task = tokio::spawn(async move {
        let _ = run_command(
            &request(&script, Duration::from_secs(60)),
            &CancellationToken::new(),
            |_, _| {
                if let Some(tx) = started_tx.take() {
                    let _ = tx.send(());
                }
            },
        )
        .await;
    });
    tokio::time::timeout(Duration::from_secs(10), started_rx)
        .await
        .expect("the command started")
        .unwrap();
    task.abort();
    let _ = task.await;
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let running = || {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        pid_alive(pid) && !state.contains(") Z") && !state.contains(") X")
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while running() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!running(), "the command survived its dropped future");
}
