//! AGENTS.md: the global file, then the repository's from its root down to the cwd,
//! one user message at the start of the thread, capped, and never a failed turn.

use deputy_test_support::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;

use crate::{
    completed_with, home_with, manager, run_first_turn, run_turn, start, transcript, warnings,
};

/// The message the instructions `text` make for a thread in `cwd`.
fn framed(cwd: &std::path::Path, text: &str) -> String {
    format!(
        "user: # AGENTS.md instructions for {}\n\n<INSTRUCTIONS>\n{text}\n</INSTRUCTIONS>",
        cwd.display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn global_then_repository_root_then_nested_directories_in_one_message_sent_once() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::text_turn("one"),
        MockResponse::text_turn("two"),
    ]);
    let home = home_with(&server, "");
    let repo = home.workspace().join("repo");
    let cwd = repo.join("pkg/inner");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir(repo.join(".git")).unwrap();
    std::fs::write(home.path().join("AGENTS.md"), "global rule").unwrap();
    // Above the repository root: not the repository's business.
    std::fs::write(home.workspace().join("AGENTS.md"), "outside rule").unwrap();
    std::fs::write(repo.join("AGENTS.md"), "root rule").unwrap();
    std::fs::write(repo.join("pkg/AGENTS.md"), "pkg rule\n").unwrap();
    std::fs::write(cwd.join("AGENTS.md"), "inner rule").unwrap();
    let manager = manager();
    let thread = start(&manager, &home, &cwd).await;

    let events = run_first_turn(&thread, "first").await;
    assert_eq!(completed_with(&events), "one");
    assert_eq!(warnings(&events), Vec::<String>::new());
    run_turn(&thread, "second").await;

    let cwd = cwd.canonicalize().unwrap();
    let requests = server.requests();
    let first = transcript(&requests[0]);
    assert!(first[0].starts_with("developer: <environment_context>"));
    assert_eq!(
        first[1..],
        [
            framed(
                &cwd,
                "global rule\n\n--- project-doc ---\n\nroot rule\n\npkg rule\n\n\ninner rule"
            ),
            "user: first".to_string(),
        ]
    );
    let second = transcript(&requests[1]);
    let instructions: Vec<&String> = second
        .iter()
        .filter(|text| text.starts_with("user: # AGENTS.md"))
        .collect();
    assert_eq!(instructions, [&first[1]], "sent once, at the start");
    assert_eq!(second.last().map(String::as_str), Some("user: second"));
    manager.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outside_a_repository_only_the_cwds_own_file_is_read() {
    let server = MockModelServer::start();
    server.push(MockResponse::text_turn("ok"));
    let home = home_with(&server, "");
    let cwd = home.workspace().join("sub");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::write(home.workspace().join("AGENTS.md"), "parent rule").unwrap();
    std::fs::write(cwd.join("AGENTS.md"), "own rule").unwrap();
    let manager = manager();
    let thread = start(&manager, &home, &cwd).await;

    completed_with(&run_first_turn(&thread, "go").await);

    let request = transcript(&server.requests()[0]);
    assert_eq!(
        request[1..],
        [
            framed(&cwd.canonicalize().unwrap(), "own rule"),
            "user: go".to_string()
        ]
    );
    manager.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_instructions_are_capped_at_project_doc_max_bytes_and_the_cut_is_noted() {
    let server = MockModelServer::start();
    server.push(MockResponse::text_turn("ok"));
    let home = home_with(&server, "project_doc_max_bytes = 10");
    std::fs::write(home.path().join("AGENTS.md"), "0123456").unwrap();
    std::fs::write(home.workspace().join("AGENTS.md"), "ABCDEFGHIJ").unwrap();
    let manager = manager();
    let thread = start(&manager, &home, home.workspace()).await;

    let events = run_first_turn(&thread, "go").await;

    completed_with(&events);
    let cwd = home.workspace().canonicalize().unwrap();
    let request = transcript(&server.requests()[0]);
    assert_eq!(
        request[1],
        framed(
            &cwd,
            "0123456\n\n--- project-doc ---\n\nABC\n\n[AGENTS.md instructions truncated to 10 bytes]"
        )
    );
    let warnings = warnings(&events);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("project_doc_max_bytes (10 bytes)")
            && warnings[0].contains(&cwd.join("AGENTS.md").display().to_string()),
        "{warnings:?}"
    );
    manager.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zero_bytes_or_no_file_sends_no_instructions_message() {
    let server = MockModelServer::start();
    server.push_all([MockResponse::text_turn("a"), MockResponse::text_turn("b")]);
    let disabled = home_with(&server, "project_doc_max_bytes = 0");
    std::fs::write(disabled.path().join("AGENTS.md"), "global").unwrap();
    std::fs::write(disabled.workspace().join("AGENTS.md"), "project").unwrap();
    let none = home_with(&server, "");
    let manager = manager();

    let thread = start(&manager, &disabled, disabled.workspace()).await;
    completed_with(&run_first_turn(&thread, "go").await);
    let thread = start(&manager, &none, none.workspace()).await;
    completed_with(&run_first_turn(&thread, "go").await);

    for request in server.requests() {
        let request = transcript(&request);
        assert_eq!(request.len(), 2, "{request:?}");
        assert!(request[0].starts_with("developer: "));
        assert_eq!(request[1], "user: go");
    }
    manager.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_is_not_utf8_is_skipped_with_a_warning_and_the_turn_goes_on() {
    let server = MockModelServer::start();
    server.push(MockResponse::text_turn("fine"));
    let home = home_with(&server, "");
    let repo = home.workspace();
    let cwd = repo.join("pkg");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir(repo.join(".git")).unwrap();
    std::fs::write(repo.join("AGENTS.md"), b"\xff\xfe\x00 not text").unwrap();
    std::fs::write(cwd.join("AGENTS.md"), "nested rule").unwrap();
    let manager = manager();
    let thread = start(&manager, &home, &cwd).await;

    let events = run_first_turn(&thread, "go").await;

    assert_eq!(completed_with(&events), "fine");
    let warnings = warnings(&events);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let bad = repo.canonicalize().unwrap().join("AGENTS.md");
    assert!(
        warnings[0].contains(&bad.display().to_string()) && warnings[0].contains("not UTF-8"),
        "{warnings:?}"
    );
    // The warning comes with the thread's opening events, before the turn starts.
    let warning_at = events
        .iter()
        .position(|e| matches!(e.msg, deputy_protocol::ThreadEventMsg::Warning(_)))
        .unwrap();
    assert!(matches!(
        events[0].msg,
        deputy_protocol::ThreadEventMsg::SessionConfigured(_)
    ));
    assert!(events[warning_at].turn_id.is_none());
    let request = transcript(&server.requests()[0]);
    assert_eq!(
        request[1],
        framed(&cwd.canonicalize().unwrap(), "nested rule")
    );
    manager.shutdown_all().await;
}
