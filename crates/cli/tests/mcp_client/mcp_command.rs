//! `deputy mcp list|get|add|remove`: what it prints, and config.toml kept as the user
//! wrote it around its edits.

use std::fs;

use deputy_test_support::{MockModelServer, MockResponse, TestHome};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::{Finished, deputy, finish};
use crate::{all_requests, namespaced_call_turn, output_for, reference_servers};

fn mcp(home: &TestHome, args: &[&str]) -> Finished {
    let mut full = vec!["mcp"];
    full.extend_from_slice(args);
    finish(deputy(home, &full))
}

fn json_of(run: &Finished) -> Value {
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
}

/// A config with comments and an odd layout, as a person leaves it.
const HAND_WRITTEN: &str = "# my settings\nmodel   = \"mock-model\"   # the cheap one\n\n\
                            # servers I use\n[mcp_servers.docs]\nurl = \"https://docs.example/mcp\"  # hosted\n";

#[test]
fn add_and_remove_keep_the_rest_of_config_toml_as_written() {
    let home = TestHome::new("http://127.0.0.1:9");
    home.write_config(HAND_WRITTEN);

    mcp(
        &home,
        &[
            "add",
            "local",
            "--env",
            "TOKEN=s3cret",
            "--",
            "node",
            "server.js",
            "--flag",
        ],
    )
    .assert_code(0);
    mcp(
        &home,
        &[
            "add",
            "remote",
            "--url",
            "http://127.0.0.1:7/mcp",
            "--bearer-token-env-var",
            "REMOTE_TOKEN",
        ],
    )
    .assert_code(0);

    let text = fs::read_to_string(home.config_path()).expect("config");
    assert!(
        text.starts_with(HAND_WRITTEN),
        "the hand-written part changed:\n{text}"
    );
    let list = mcp(&home, &["list", "--json"]);
    list.assert_code(0);
    let servers = json_of(&list);
    let names: Vec<&str> = servers
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(names, ["docs", "local", "remote"]);
    let local = &servers[1];
    assert_eq!(local["transport"]["type"], "stdio");
    assert_eq!(local["transport"]["command"], "node");
    assert_eq!(local["transport"]["args"], json!(["server.js", "--flag"]));
    assert_eq!(
        local["transport"]["env"],
        json!({"TOKEN": "*****"}),
        "env values are masked"
    );
    assert!(!list.stdout.contains("s3cret"), "{}", list.stdout);
    assert_eq!(local["enabled"], true);
    assert_eq!(local["startup_timeout_sec"], 10.0);
    assert_eq!(local["tool_timeout_sec"], 60.0);
    let get = mcp(&home, &["get", "remote", "--json"]);
    get.assert_code(0);
    let remote = json_of(&get);
    assert_eq!(remote["transport"]["url"], "http://127.0.0.1:7/mcp");
    assert_eq!(remote["transport"]["bearer_token_env_var"], "REMOTE_TOKEN");
    let human = mcp(&home, &["list"]);
    human.assert_code(0);
    assert!(
        human
            .stdout
            .contains("local\tnode server.js --flag\tenabled"),
        "{}",
        human.stdout
    );

    mcp(&home, &["remove", "local"]).assert_code(0);
    mcp(&home, &["remove", "remote"]).assert_code(0);
    let text = fs::read_to_string(home.config_path()).expect("config");
    assert_eq!(
        text, HAND_WRITTEN,
        "removing what was added gives the file back"
    );
}

#[test]
fn mistakes_are_refused_with_the_file_untouched() {
    let home = TestHome::new("http://127.0.0.1:9");
    home.write_config(HAND_WRITTEN);

    for (args, says) in [
        (
            &["add", "docs", "--url", "http://127.0.0.1:7/mcp"][..],
            "already configured",
        ),
        (
            &["add", "bad name", "--", "node"][..],
            "invalid MCP server name",
        ),
        (&["add", "nothing"][..], "--url"),
        (&["add", "ftp", "--url", "ftp://example/mcp"][..], "http://"),
        (&["remove", "absent"][..], "no MCP server `absent`"),
        (&["get", "absent"][..], "no MCP server `absent`"),
    ] {
        let run = mcp(&home, args);
        assert_eq!(
            run.status.code(),
            Some(1),
            "{args:?}: {}{}",
            run.stdout,
            run.stderr
        );
        assert!(run.stderr.contains(says), "{args:?}: {}", run.stderr);
        assert_eq!(
            fs::read_to_string(home.config_path()).expect("config"),
            HAND_WRITTEN
        );
    }

    home.write_config("[mcp_servers.broken]\nargs = [\"x\"]\n");
    let run = mcp(&home, &["list"]);
    assert_eq!(run.status.code(), Some(1), "{}", run.stdout);
    assert!(
        run.stderr.contains("mcp_servers.broken") && run.stderr.contains("command"),
        "{}",
        run.stderr
    );
}

/// A server added with `deputy mcp add` is the one the next thread uses.
#[test]
fn a_server_added_from_the_command_line_serves_the_next_thread() {
    let everything = reference_servers().everything();
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    let everything = everything.display().to_string();
    mcp(
        &home,
        &["add", "everything", "--", "node", &everything, "stdio"],
    )
    .assert_code(0);
    server.push_all([
        namespaced_call_turn(
            "c-echo",
            "mcp__everything__",
            "echo",
            json!({"message": "added"}),
        ),
        MockResponse::text_turn("Echoed."),
    ]);

    let run = finish(deputy(&home, &["exec", "echo through the added server"]));

    run.assert_code(0);
    let requests = all_requests(&server, 2);
    assert!(output_for(&requests[1], "c-echo").contains("Echo: added"));
}
