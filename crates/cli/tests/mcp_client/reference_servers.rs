//! The reference MCP servers: their tools offered to the model, called when it asks, their
//! results and resources in the model's next request.

use std::fs;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use deputy_test_support::{MockModelServer, MockResponse, TestHome};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::common::exec;
use crate::{
    all_requests, completed_mcp_calls, home_with, json_lines, namespaced_call_turn, offered_tool,
    output_for, reference_servers, toml_str,
};

/// Scripts echo, get-sum and a resource read of `server-everything` configured as
/// `everything`, runs `deputy exec --json` and checks each result reached the model.
fn everything_round_trip(server: &MockModelServer, home: &deputy_test_support::TestHome) {
    server.push_all([
        namespaced_call_turn(
            "call-echo",
            "mcp__everything__",
            "echo",
            json!({"message": "ping-27"}),
        ),
        namespaced_call_turn(
            "call-sum",
            "mcp__everything__",
            "get-sum",
            json!({"a": 2, "b": 40}),
        ),
        MockResponse::function_call_turn(
            "call-read",
            "read_mcp_resource",
            json!({"server": "everything", "uri": "demo://resource/static/document/features.md"}),
        ),
        MockResponse::text_turn("All three answered."),
    ]);

    let run = exec(home, &["--json", "use the everything server"]);

    run.assert_code(0);
    let requests = all_requests(server, 4);
    let namespace = offered_tool(&requests[0], "mcp__everything__");
    assert_eq!(namespace["type"], "namespace", "{namespace}");
    let functions: Vec<&str> = namespace["tools"]
        .as_array()
        .expect("namespace tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    for tool in ["echo", "get-sum"] {
        assert!(
            functions.contains(&tool),
            "{tool} not offered: {functions:?}"
        );
    }
    for tool in [
        "list_mcp_resources",
        "list_mcp_resource_templates",
        "read_mcp_resource",
    ] {
        offered_tool(&requests[0], tool);
    }
    assert!(
        output_for(&requests[1], "call-echo").contains("Echo: ping-27"),
        "{}",
        output_for(&requests[1], "call-echo")
    );
    let sum = output_for(&requests[2], "call-sum");
    assert!(sum.contains("42"), "{sum}");
    let document = output_for(&requests[3], "call-read");
    let features = fs::read_to_string(
        reference_servers()
            .everything()
            .with_file_name("docs")
            .join("features.md"),
    )
    .expect("features.md of server-everything");
    let line = features
        .lines()
        .find(|line| line.len() > 20)
        .expect("a line of features.md");
    assert!(document.contains(line.trim()), "{line:?} not in {document}");

    let events = json_lines(&run.stdout);
    let calls = completed_mcp_calls(&events);
    assert_eq!(calls.len(), 2, "{}", run.stdout);
    assert_eq!(calls[0]["server"], "everything");
    assert_eq!(calls[0]["tool"], "echo");
    assert_eq!(calls[0]["arguments"], json!({"message": "ping-27"}));
    assert_eq!(calls[0]["status"], "completed");
    assert_eq!(calls[1]["tool"], "get-sum");
}

#[test]
fn server_everything_over_stdio_answers_tools_and_resources_in_the_next_request() {
    let everything = reference_servers().everything();
    let server = MockModelServer::start();
    let home = home_with(
        &server,
        &format!(
            "[mcp_servers.everything]\ncommand = \"node\"\nargs = [{}, \"stdio\"]\n",
            toml_str(&everything.display().to_string())
        ),
    );

    everything_round_trip(&server, &home);
}

/// `server-everything` serving Streamable HTTP on a free port; killed when dropped.
struct HttpEverything {
    child: Child,
    port: u16,
}

impl HttpEverything {
    fn start() -> Self {
        let everything = reference_servers().everything();
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new("node")
            .arg(&everything)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn server-everything");
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "server-everything never listened on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Self { child, port }
    }
}

impl Drop for HttpEverything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn server_everything_over_streamable_http_answers_tools_and_resources_in_the_next_request() {
    let everything = HttpEverything::start();
    let server = MockModelServer::start();
    let home = home_with(
        &server,
        &format!(
            "[mcp_servers.everything]\nurl = \"http://127.0.0.1:{}/mcp\"\n",
            everything.port
        ),
    );

    everything_round_trip(&server, &home);
}

#[test]
fn server_filesystem_reads_and_writes_where_allowed_and_nowhere_else() {
    let filesystem = reference_servers().filesystem();
    let server = MockModelServer::start();
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let outside = elsewhere
        .path()
        .canonicalize()
        .expect("canonical tempdir")
        .join("outside.txt");
    fs::write(&outside, "not for the model\n").expect("write outside");
    let home = TestHome::new(&server.base_url());
    let workspace = home
        .workspace()
        .canonicalize()
        .expect("canonical workspace");
    // The workspace on the command line and in the roots deputy answers: the server allows
    // it whether or not it has applied the roots when the first call arrives.
    home.append_config(&format!(
        "[mcp_servers.files]\ncommand = \"node\"\nargs = [{}, {}]\n",
        toml_str(&filesystem.display().to_string()),
        toml_str(&workspace.display().to_string())
    ));
    fs::write(workspace.join("notes.txt"), "the answer is 42\n").expect("write notes");
    let written = workspace.join("written.txt");
    server.push_all([
        namespaced_call_turn(
            "call-read",
            "mcp__files__",
            "read_text_file",
            json!({"path": workspace.join("notes.txt").display().to_string()}),
        ),
        namespaced_call_turn(
            "call-write",
            "mcp__files__",
            "write_file",
            json!({"path": written.display().to_string(), "content": "written by the model\n"}),
        ),
        namespaced_call_turn(
            "call-outside",
            "mcp__files__",
            "read_text_file",
            json!({"path": outside.display().to_string()}),
        ),
        MockResponse::text_turn("Read and wrote."),
    ]);

    let run = exec(&home, &["--json", "read the notes, write a file"]);

    run.assert_code(0);
    let requests = all_requests(&server, 4);
    let read = output_for(&requests[1], "call-read");
    assert!(read.contains("the answer is 42"), "{read}");
    assert_eq!(
        fs::read_to_string(&written).expect("the file the server wrote"),
        "written by the model\n"
    );
    let refused = output_for(&requests[3], "call-outside");
    assert!(
        refused.contains("outside allowed directories") && !refused.contains("not for the model"),
        "{refused}"
    );
    let events = json_lines(&run.stdout);
    let calls = completed_mcp_calls(&events);
    assert_eq!(calls.len(), 3, "{}", run.stdout);
    assert_eq!(calls[1]["status"], "completed", "{calls:?}");
}

/// `roots/list` answers the thread's workspace (server-everything asks when its
/// `get-roots-list` tool is called and reports what it was told).
#[test]
fn roots_list_answers_the_thread_workspace() {
    let everything = reference_servers().everything();
    let server = MockModelServer::start();
    let home = home_with(
        &server,
        &format!(
            "[mcp_servers.everything]\ncommand = \"node\"\nargs = [{}, \"stdio\"]\n",
            toml_str(&everything.display().to_string())
        ),
    );
    server.push_all([
        namespaced_call_turn(
            "call-roots",
            "mcp__everything__",
            "get-roots-list",
            json!({}),
        ),
        MockResponse::text_turn("Listed."),
    ]);

    let run = exec(&home, &["--json", "which roots?"]);

    run.assert_code(0);
    let requests = all_requests(&server, 2);
    let roots = output_for(&requests[1], "call-roots");
    let workspace = home
        .workspace()
        .canonicalize()
        .expect("canonical workspace");
    assert!(
        roots.contains(&format!("URI: file://{}", workspace.display())),
        "{roots}"
    );
}

/// deputy's own MCP server as the MCP server of a deputy thread: the inner deputy runs a
/// turn of its own against the same model server, and its answer is the tool's result.
#[test]
fn deputy_itself_serves_a_deputy_thread() {
    let server = MockModelServer::start();
    let home = home_with(
        &server,
        &format!(
            "[mcp_servers.inner]\ncommand = {}\nargs = [\"mcp-server\"]\n\
             env_vars = [\"DEPUTY_HOME\"]\n",
            toml_str(crate::common::DEPUTY)
        ),
    );
    server.push_all([
        namespaced_call_turn(
            "c-inner",
            "mcp__inner__",
            "codex",
            json!({"prompt": "inner task"}),
        ),
        MockResponse::text_turn("inner answer"),
        MockResponse::text_turn("outer done"),
    ]);

    let run = exec(&home, &["--json", "delegate to the inner deputy"]);

    run.assert_code(0);
    let requests = all_requests(&server, 3);
    let inner_prompt = requests[1].body["input"].to_string();
    assert!(inner_prompt.contains("inner task"), "{inner_prompt}");
    let output = output_for(&requests[2], "c-inner");
    assert!(output.contains("inner answer"), "{output}");
    assert!(run.stdout.contains("outer done"), "{}", run.stdout);
}

/// On Chat Completions there are no namespaces: the tool is `mcp__everything__echo`.
#[test]
fn on_chat_providers_the_tools_have_flat_names() {
    let everything = reference_servers().everything();
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    let config = crate::common::with_provider_key(
        &TestHome::default_config(&server.base_url()),
        "wire_api",
        "\"chat\"",
    );
    home.write_config(&format!(
        "{config}[mcp_servers.everything]\ncommand = \"node\"\nargs = [{}, \"stdio\"]\n",
        toml_str(&everything.display().to_string())
    ));
    server.push_all([
        MockResponse::chat_tool_call_turn(
            "c-echo",
            "mcp__everything__echo",
            json!({"message": "flat"}),
        ),
        MockResponse::chat_text_turn("Echoed."),
    ]);

    let run = exec(&home, &["echo on chat"]);

    run.assert_code(0);
    let requests = all_requests(&server, 2);
    let names: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(names.contains(&"mcp__everything__echo"), "{names:?}");
    let tool_message = requests[1].body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "c-echo")
        .cloned()
        .unwrap_or_else(|| panic!("no tool message: {}", requests[1].body));
    assert!(
        tool_message["content"].to_string().contains("Echo: flat"),
        "{tool_message}"
    );
}
