//! `deputy exec` killed at random instants while it applies a patch — one large file, or
//! 200 small ones. SIGKILL: every file is whole (old or new) at once, and after the session
//! is resumed the patch is all or nothing and the model is told which. SIGTERM: deputy
//! finishes the patch before it exits, so every file is new.
//!
//! The instants are random within the time a patch takes, measured first: the kill waits
//! for the patch's journal to appear in `$DEPUTY_HOME/patch-journal`, then a random delay.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use deputy_test_support::{MockModelServer, MockResponse, RecordedRequest, TestHome};
use serde_json::{Value, json};

use crate::common::{deputy, exec};

/// How long a step the test waits for may take on a loaded machine.
const SOON: Duration = Duration::from_secs(30);

/// A patch and the files it changes: name, content before, content after.
struct Scene {
    files: Vec<(String, String, String)>,
    patch: String,
}

/// One file of about 4 MB whose first line changes: the whole file is rewritten.
fn large_file() -> Scene {
    let body: String = (0..100_000)
        .map(|n| format!("line {n:06} of a large file, unchanged\n"))
        .collect();
    let old = format!("first line\n{body}");
    let new = format!("FIRST LINE\n{body}");
    let patch = "*** Begin Patch\n*** Update File: large.txt\n@@\n-first line\n+FIRST LINE\n \
                 line 000000 of a large file, unchanged\n*** End Patch"
        .to_string();
    Scene {
        files: vec![("large.txt".into(), old, new)],
        patch,
    }
}

/// 200 small files, each updated.
fn many_files() -> Scene {
    let mut patch = String::from("*** Begin Patch\n");
    let mut files = Vec::new();
    for n in 0..200 {
        let name = format!("f{n:03}.txt");
        let old = format!("file {n}\nold {n}\nend\n");
        let new = format!("file {n}\nnew {n}\nend\n");
        patch.push_str(&format!(
            "*** Update File: {name}\n@@\n file {n}\n-old {n}\n+new {n}\n"
        ));
        files.push((name, old, new));
    }
    patch.push_str("*** End Patch");
    Scene { files, patch }
}

/// A model that answers "patch it" with the scene's patch and anything else with text.
fn model(scene: &Scene) -> MockModelServer {
    let server = MockModelServer::start();
    let patch = scene.patch.clone();
    server.respond_with(move |request| {
        if last_user_text(request).as_deref() == Some("patch it") && !answered(request) {
            MockResponse::function_call_turn("call-patch", "apply_patch", json!({"input": patch}))
        } else {
            MockResponse::text_turn("done")
        }
    });
    server
}

fn input(request: &RecordedRequest) -> Vec<Value> {
    request.body["input"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn last_user_text(request: &RecordedRequest) -> Option<String> {
    input(request)
        .iter()
        .rev()
        .find(|item| item["role"] == "user")
        .and_then(|item| item["content"][0]["text"].as_str().map(str::to_string))
}

/// Whether the patch call already has its output in the request.
fn answered(request: &RecordedRequest) -> bool {
    input(request)
        .iter()
        .any(|item| item["type"] == "function_call_output")
}

fn write_old(home: &TestHome, scene: &Scene) {
    for (name, old, _) in &scene.files {
        std::fs::write(home.workspace().join(name), old).unwrap();
    }
}

/// Which files hold their old and which their new content; fails on anything else
/// (torn, empty, missing) and, unless a patch may still be under way (`settled` false), on
/// any other entry in the workspace (leftover temporary or backup files).
fn file_states(home: &TestHome, scene: &Scene, when: &str, settled: bool) -> (usize, usize) {
    let (mut old, mut new) = (0, 0);
    for (name, before, after) in &scene.files {
        let content = std::fs::read_to_string(home.workspace().join(name))
            .unwrap_or_else(|e| panic!("{when}: {name}: {e}"));
        if content == *before {
            old += 1;
        } else if content == *after {
            new += 1;
        } else {
            panic!(
                "{when}: {name} is neither old nor new ({} bytes)",
                content.len()
            );
        }
    }
    let entries = std::fs::read_dir(home.workspace()).unwrap().count();
    if settled && entries != scene.files.len() {
        let names: Vec<String> = std::fs::read_dir(home.workspace())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !scene.files.iter().any(|(name, _, _)| name == n))
            .collect();
        panic!("{when}: unexpected entries in the workspace: {names:?}");
    }
    (old, new)
}

fn journals(home: &TestHome) -> usize {
    std::fs::read_dir(home.path().join("patch-journal")).map_or(0, Iterator::count)
}

fn start(home: &TestHome) -> Child {
    deputy(home, &["exec", "--json", "patch it"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn deputy")
}

/// Whether the scene's file `at` already holds its new content (read from its head only).
fn file_new(home: &TestHome, scene: &Scene, at: usize) -> bool {
    use std::io::Read;
    let (name, _, new) = &scene.files[at];
    let mut head = [0u8; 16];
    std::fs::File::open(home.workspace().join(name))
        .and_then(|mut file| file.read_exact(&mut head))
        .is_ok_and(|()| new.as_bytes().starts_with(&head))
}

/// Waits until `reached` holds (`Some(when)`) or the process exits (`None`); checks
/// without pausing when `spin`, to catch a step that takes a millisecond.
fn wait_for(child: &mut Child, spin: bool, mut reached: impl FnMut() -> bool) -> Option<Instant> {
    let start = Instant::now();
    loop {
        if reached() {
            return Some(Instant::now());
        }
        if child.try_wait().unwrap().is_some() {
            return None;
        }
        assert!(start.elapsed() < SOON, "the patch never got there");
        if !spin {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

fn wait(child: &mut Child) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > SOON {
            let _ = child.kill();
            panic!("deputy did not exit after the signal");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// How long an undisturbed patch of the scene takes: from its journal's appearance to its
/// removal, and from its first file's rename to its last one's (at least a millisecond).
fn patch_timing(scene: &Scene, server: &MockModelServer) -> (Duration, Duration) {
    let home = TestHome::new(&server.base_url());
    write_old(&home, scene);
    let mut child = start(&home);
    let began = wait_for(&mut child, false, || journals(&home) > 0).expect("the journal was seen");
    let first = wait_for(&mut child, true, || file_new(&home, scene, 0))
        .expect("the first file was renamed");
    let last = scene.files.len() - 1;
    let renamed = wait_for(&mut child, true, || file_new(&home, scene, last))
        .expect("the last file was renamed");
    while journals(&home) > 0 {
        std::thread::sleep(Duration::from_micros(200));
    }
    let whole = began.elapsed();
    assert!(wait(&mut child).success());
    assert_eq!(
        file_states(&home, scene, "undisturbed", true),
        (0, scene.files.len())
    );
    (whole, (renamed - first).max(Duration::from_millis(1)))
}

/// What the kills found: how many fell while the patch was under way, how many of those
/// left a mix of old and new files until the session was resumed, and how the resume
/// settled them.
#[derive(Debug, Default)]
struct Tally {
    during_patch: usize,
    half_applied: usize,
    rolled_back: usize,
    completed: usize,
}

/// Sends `signal` to `deputy exec` at `instants` random instants of the scene's patch:
/// every other one anywhere in the patch, the others once its first file was renamed.
fn kill_at_random_instants(scene: &Scene, signal: i32, instants: usize) -> Tally {
    let server = model(scene);
    let (whole, renames) = patch_timing(scene, &server);
    eprintln!(
        "patch of {} files: {whole:?}, renames {renames:?}",
        scene.files.len()
    );
    let mut tally = Tally::default();
    for instant in 0..instants {
        let home = TestHome::new(&server.base_url());
        write_old(&home, scene);
        let mut child = start(&home);
        let renaming = instant % 2 == 1;
        let (phase, window) = if renaming {
            ("rename", renames)
        } else {
            ("journal", whole)
        };
        let reached = wait_for(&mut child, renaming, || {
            if renaming {
                file_new(&home, scene, 0)
            } else {
                journals(&home) > 0
            }
        });
        if reached.is_none() {
            continue;
        }
        let delay = window.mul_f64(fastrand::f64());
        std::thread::sleep(delay);
        // SAFETY: kill only sends a signal to the child we spawned.
        unsafe { libc::kill(child.id() as i32, signal) };
        let status = wait(&mut child);
        let when = format!("instant {instant} ({delay:?} after the {phase} step began)");
        let interrupted = journals(&home) > 0;
        let (old, new) = file_states(&home, scene, &when, !interrupted);
        if signal == libc::SIGTERM {
            // Stopped by SIGTERM, deputy finished the patch first.
            use std::os::unix::process::ExitStatusExt;
            assert!(
                status.code() == Some(128 + libc::SIGTERM) || status.success(),
                "{when}: {status:?}"
            );
            assert!(status.signal().is_none(), "{when}: died of {status:?}");
            assert_eq!((old, new), (0, scene.files.len()), "{when}");
            assert!(!interrupted, "{when}: a journal was left");
            tally.during_patch += 1;
            continue;
        }
        if !interrupted {
            assert_eq!(
                (old, new),
                (0, scene.files.len()),
                "{when}: no journal, not all new"
            );
            continue;
        }
        tally.during_patch += 1;
        if old > 0 && new > 0 {
            tally.half_applied += 1;
        }
        let resumed = exec(&home, &["resume", "--last", "check"]);
        resumed.assert_code(0);
        let (old, new) = file_states(&home, scene, &format!("{when}, resumed"), true);
        assert_eq!(
            journals(&home),
            0,
            "{when}: the journal outlived the resume"
        );
        let told = server
            .requests()
            .last()
            .map(|request| {
                input(request)
                    .iter()
                    .find(|item| item["type"] == "function_call_output")
                    .map(|item| item["output"].to_string())
                    .unwrap_or_default()
            })
            .unwrap_or_default();
        if new == 0 {
            tally.rolled_back += 1;
            assert!(
                told.contains("rolled back") || told.contains("before it changed any file"),
                "{when}: the model was told {told}"
            );
        } else {
            assert_eq!(old, 0, "{when}: half applied after the resume");
            tally.completed += 1;
            assert!(
                told.contains("fully applied"),
                "{when}: the model was told {told}"
            );
        }
    }
    eprintln!("signal {signal}, {} files: {tally:?}", scene.files.len());
    tally
}

#[test]
fn sigkill_during_a_patch_leaves_whole_files_and_resuming_makes_it_all_or_nothing() {
    // 40 instants; the 200-file patch takes about a second to stage here, so fewer of them.
    let large = kill_at_random_instants(&large_file(), libc::SIGKILL, 30);
    let many = kill_at_random_instants(&many_files(), libc::SIGKILL, 10);
    // Kills fell mid-patch and were rolled back: the instants did cover the patch. (Kills
    // at every single step, the renames included, are `deputy-apply-patch`'s unit tests.)
    assert!(large.rolled_back > 0, "{large:?}");
    assert!(many.rolled_back > 0, "{many:?}");
}

#[test]
fn sigterm_during_a_patch_waits_for_it_to_finish() {
    let large = kill_at_random_instants(&large_file(), libc::SIGTERM, 20);
    let many = kill_at_random_instants(&many_files(), libc::SIGTERM, 4);
    assert!(large.during_patch > 0 && many.during_patch > 0);
}

/// `deputy sessions repair` does what a resume would: the patch rolled back, the model told.
/// The kill is made to fall within the patch: deputy is stopped (SIGSTOP) the moment its
/// journal appears, and killed only if the journal is still there, so no timing decides it.
#[test]
fn sessions_repair_rolls_back_a_killed_patch() {
    let scene = many_files();
    let server = model(&scene);
    for _ in 0..5 {
        let home = TestHome::new(&server.base_url());
        write_old(&home, &scene);
        let mut child = start(&home);
        if wait_for(&mut child, true, || journals(&home) > 0).is_none() {
            continue;
        }
        let pid = child.id() as i32;
        let mut status = 0;
        // SAFETY: kill only sends signals to the child we spawned; waitpid with WUNTRACED
        // returns once that child has stopped (or died), writing only to `status`.
        let stopped = unsafe {
            libc::kill(pid, libc::SIGSTOP);
            libc::waitpid(pid, &mut status, libc::WUNTRACED) == pid && libc::WIFSTOPPED(status)
        };
        if !stopped {
            // It had already exited, and waitpid reaped it: the patch was over.
            continue;
        }
        let mid_patch = journals(&home) > 0;
        // SAFETY: as above.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        wait(&mut child);
        if !mid_patch {
            continue;
        }
        let repaired = exec_sessions(&home, &["sessions", "repair"]);
        assert!(repaired.0.success(), "{}", repaired.2);
        assert!(
            repaired.1.contains("patch of call call-patch"),
            "{}",
            repaired.1
        );
        assert_eq!(journals(&home), 0);
        let (old, new) = file_states(&home, &scene, "repaired", true);
        assert!(old == 0 || new == 0, "{old} old, {new} new");
        let again = exec_sessions(&home, &["sessions", "repair"]);
        assert_eq!(again.1.trim(), "no session needs repair");
        return;
    }
    panic!("deputy was never stopped within the patch in 5 tries");
}

fn exec_sessions(home: &TestHome, args: &[&str]) -> (std::process::ExitStatus, String, String) {
    let out = deputy(home, args).output().unwrap();
    (
        out.status,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
