//! The mock model server as an HTTP client sees it, byte for byte.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

mod raw_http;

use std::collections::BTreeSet;
use std::io;
use std::time::{Duration, Instant};

use deputy_test_support::{MockModelServer, MockResponse, chat, responses};
use raw_http::{RawConnection, post, post_request, sse_events};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(10);

#[test]
fn base_url_points_at_the_v1_prefix_on_localhost() {
    let server = MockModelServer::start();
    assert_eq!(
        server.base_url(),
        format!("http://127.0.0.1:{}/v1", server.address().port())
    );
}

#[test]
fn responses_endpoint_streams_text_turn_as_server_sent_events() {
    let server = MockModelServer::start();
    server.push(MockResponse::text_turn("hello"));

    let response = post(server.address(), "/v1/responses", r#"{"model":"m"}"#);

    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("text/event-stream"));
    assert!(response.complete, "a scripted stream must end cleanly");
    let events = sse_events(&response.text());
    let kinds: Vec<&str> = events.iter().map(|(kind, _)| kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "response.created",
            "response.output_text.delta",
            "response.output_item.done",
            "response.completed"
        ]
    );
    assert_eq!(events[1].1["delta"], "hello");
    assert_eq!(
        events[2].1["item"]["content"][0],
        json!({"type": "output_text", "text": "hello"})
    );
    assert_eq!(events[3].1["response"]["usage"]["total_tokens"], 0);
    assert!(
        events
            .iter()
            .all(|(kind, data)| data["type"] == kind.as_str())
    );
}

#[test]
fn function_call_turn_carries_arguments_as_a_json_string() {
    let server = MockModelServer::start();
    server.push(MockResponse::function_call_turn(
        "call-7",
        "shell",
        json!({"command": ["ls", "-la"]}),
    ));

    let events = sse_events(&post(server.address(), "/v1/responses", "{}").text());

    let item = &events[1].1["item"];
    assert_eq!(item["type"], "function_call");
    assert_eq!(item["call_id"], "call-7");
    assert_eq!(item["name"], "shell");
    let arguments: Value =
        serde_json::from_str(item["arguments"].as_str().unwrap_or_default()).unwrap_or_default();
    assert_eq!(arguments, json!({"command": ["ls", "-la"]}));
}

#[test]
fn chat_endpoint_streams_tool_call_fragments_then_done() {
    let server = MockModelServer::start();
    let args = json!({"command": ["echo", "hi"], "workdir": "/tmp"});
    server.push(MockResponse::chat_tool_call_turn(
        "call-1",
        "shell",
        args.clone(),
    ));

    let response = post(server.address(), "/v1/chat/completions", "{}");

    assert!(response.complete);
    let text = response.text();
    let frames: Vec<&str> = text
        .split("\n\n")
        .filter(|frame| !frame.is_empty())
        .collect();
    assert_eq!(frames.last(), Some(&"data: [DONE]"));
    let chunks: Vec<Value> = frames[..frames.len() - 1]
        .iter()
        .map(|frame| serde_json::from_str(frame.trim_start_matches("data: ")).unwrap_or_default())
        .collect();
    let start = &chunks[0]["choices"][0]["delta"]["tool_calls"][0];
    assert_eq!(start["id"], "call-1");
    assert_eq!(start["function"]["name"], "shell");
    let fragments: Vec<&str> = chunks[1..chunks.len() - 1]
        .iter()
        .map(|chunk| {
            chunk["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
                .as_str()
                .unwrap_or_default()
        })
        .collect();
    assert!(
        fragments.len() >= 2,
        "arguments should arrive in pieces: {fragments:?}"
    );
    assert_eq!(
        serde_json::from_str::<Value>(&fragments.concat()).unwrap_or_default(),
        args
    );
    assert_eq!(
        chunks[chunks.len() - 1]["choices"][0]["finish_reason"],
        "tool_calls"
    );
}

#[test]
fn chat_helpers_build_openai_shaped_chunks() {
    assert_eq!(
        chat::content("hi"),
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": null}]})
    );
    assert_eq!(
        chat::usage(3, 4, 7)["usage"],
        json!({"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7})
    );
    assert_eq!(chat::usage(3, 4, 7)["choices"], json!([]));
    assert_eq!(chat::finish("stop")["choices"][0]["finish_reason"], "stop");
}

#[test]
fn one_queue_serves_both_endpoints_in_push_order() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::chat_text_turn("first"),
        MockResponse::text_turn("second"),
    ]);

    let first = post(server.address(), "/v1/responses", "{}");
    let second = post(server.address(), "/v1/chat/completions", "{}");

    assert!(
        first.text().starts_with("data: "),
        "first pushed is served first: {}",
        first.text()
    );
    assert!(second.text().starts_with("event: response.created"));
    assert_eq!(server.pending_responses(), 0);
}

#[test]
fn requests_are_recorded_with_path_query_lowercase_headers_and_json_body() {
    let server = MockModelServer::start();
    server.push(MockResponse::text_turn("ok"));
    let body = r#"{"model":"mock-model","input":[{"role":"user"}]}"#;
    let mut connection = RawConnection::connect(server.address());
    connection.send(
        format!(
            "POST /v1/responses?api-version=2025-01-01 HTTP/1.1\r\nHost: x\r\nX-Extra: 1\r\n\
             Authorization: Bearer k\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
    assert_eq!(connection.read_response().status, 200);

    let recorded = server.wait_for_requests(1, WAIT).unwrap_or_default();
    assert_eq!(recorded.len(), 1);
    let request = &recorded[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/responses");
    assert_eq!(request.query.as_deref(), Some("api-version=2025-01-01"));
    assert_eq!(
        request.headers.get("x-extra").map(String::as_str),
        Some("1")
    );
    assert_eq!(request.header("Authorization"), Some("Bearer k"));
    assert_eq!(
        request.body,
        json!({"model": "mock-model", "input": [{"role": "user"}]})
    );
    assert_eq!(request.raw_body, body);
    assert_eq!(server.request_count(), 1);
}

#[test]
fn empty_queue_answers_400_naming_the_request_number() {
    let server = MockModelServer::start();
    server.push(MockResponse::text_turn("only one"));
    assert_eq!(post(server.address(), "/v1/responses", "{}").status, 200);

    let response = post(server.address(), "/v1/responses", "{}");

    assert_eq!(response.status, 400);
    assert_eq!(
        response.json(),
        json!({"error": {"message": "mock model server: no scripted response left for request #2"}})
    );
}

#[test]
fn unknown_path_answers_404_without_taking_a_scripted_response() {
    let server = MockModelServer::start();
    server.push(MockResponse::text_turn("kept"));

    let response = post(server.address(), "/v1/embeddings", "{}");

    assert_eq!(response.status, 404);
    let message = response.json()["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.contains("no route for POST /v1/embeddings"),
        "{message}"
    );
    assert_eq!(server.pending_responses(), 1);
    assert_eq!(server.requests()[0].path, "/v1/embeddings");
}

#[test]
fn status_response_carries_code_json_body_and_scripted_headers() {
    let server = MockModelServer::start();
    let body = json!({"error": {"message": "slow down", "type": "rate_limit"}});
    server.push(MockResponse::status(429, body.clone()).with_header("Retry-After", "0"));

    let response = post(server.address(), "/v1/responses", "{}");

    assert_eq!(response.status, 429);
    assert_eq!(response.header("retry-after"), Some("0"));
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert!(response.complete);
    assert_eq!(response.json(), body);
}

#[test]
fn disconnect_after_truncates_the_chunked_body_after_n_events() {
    let server = MockModelServer::start();
    let turn = MockResponse::text_turn("never finished");
    let expected: String = turn.frames()[..2].concat();
    server.push(turn.disconnect_after(2));

    let response = post(server.address(), "/v1/responses", "{}");

    assert_eq!(response.status, 200);
    assert_eq!(response.header("transfer-encoding"), Some("chunked"));
    assert!(!response.complete, "the terminal chunk must be missing");
    assert_eq!(response.text(), expected);
}

#[test]
fn stall_after_holds_the_connection_open_until_the_server_is_dropped() {
    let server = MockModelServer::start();
    let turn = MockResponse::text_turn("stuck");
    let first_frame = turn.frames()[0].clone();
    server.push(turn.stall_after(1));
    let mut connection = RawConnection::connect(server.address());
    connection.send(post_request("/v1/responses", "{}", false).as_bytes());
    while !String::from_utf8_lossy(connection.buffered()).contains(first_frame.trim_end()) {
        assert_ne!(
            connection.read_more().unwrap_or(0),
            0,
            "stream ended before its first event"
        );
    }

    connection
        .stream
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap_or_default();
    let silent = connection.read_more();
    assert!(
        matches!(&silent, Err(err) if matches!(err.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut)),
        "a stalled stream must send nothing more, got {silent:?}"
    );

    connection
        .stream
        .set_read_timeout(Some(raw_http::READ_TIMEOUT))
        .unwrap_or_default();
    drop(server);
    let released = connection.read_more();
    assert!(
        matches!(released, Ok(0))
            || matches!(&released, Err(err) if err.kind() == io::ErrorKind::ConnectionReset),
        "dropping the server must close the stalled connection, got {released:?}"
    );
}

#[test]
fn delays_hold_back_headers_and_space_out_frames() {
    let server = MockModelServer::start();
    let gap = Duration::from_millis(40);
    server.push(
        MockResponse::text_turn("slow")
            .delay_before(gap)
            .delay_between(gap),
    );

    let started = Instant::now();
    let response = post(server.address(), "/v1/responses", "{}");

    assert!(response.complete);
    assert_eq!(sse_events(&response.text()).len(), 4);
    assert!(
        started.elapsed() >= gap * 4,
        "one delay before and three between: {:?}",
        started.elapsed()
    );
}

#[test]
fn wait_for_requests_times_out_with_what_did_arrive() {
    let server = MockModelServer::start();
    assert_eq!(post(server.address(), "/v1/nope", "{}").status, 404);

    let err = server
        .wait_for_requests(2, Duration::from_millis(50))
        .err()
        .unwrap_or_default();

    assert!(err.contains("received 1"), "{err}");
    assert!(err.contains("POST /v1/nope"), "{err}");
}

#[test]
fn wait_for_requests_wakes_when_another_thread_sends() {
    let server = MockModelServer::start();
    server.push(MockResponse::text_turn("x"));
    let addr = server.address();
    let sender = std::thread::spawn(move || post(addr, "/v1/responses", "{\"n\":1}").status);

    let recorded = server.wait_for_requests(1, WAIT);

    assert_eq!(
        recorded.map(|requests| requests[0].body.clone()),
        Ok(json!({"n": 1}))
    );
    assert_eq!(sender.join().ok(), Some(200));
}

#[test]
fn sixty_four_concurrent_requests_each_get_one_scripted_response() {
    let server = MockModelServer::start();
    server.push_all((0..64).map(|i| MockResponse::text_turn(format!("answer-{i}"))));
    let addr = server.address();

    let workers: Vec<_> = (0..64)
        .map(|_| std::thread::spawn(move || post(addr, "/v1/responses", "{}")))
        .collect();
    let answers: BTreeSet<String> = workers
        .into_iter()
        .filter_map(|worker| worker.join().ok())
        .filter(|response| response.status == 200 && response.complete)
        .map(|response| {
            sse_events(&response.text())[1].1["delta"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();

    let expected: BTreeSet<String> = (0..64).map(|i| format!("answer-{i}")).collect();
    assert_eq!(answers, expected);
    assert_eq!(server.request_count(), 64);
}

#[test]
fn pipelined_keep_alive_requests_are_answered_in_order() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::text_turn("one"),
        MockResponse::status(500, json!({"error": {"message": "two"}})),
        MockResponse::chat_text_turn("three"),
    ]);
    let mut connection = RawConnection::connect(server.address());
    let pipelined = [
        post_request("/v1/responses", "{\"n\":1}", true),
        post_request("/v1/responses", "{\"n\":2}", true),
        post_request("/v1/chat/completions", "{\"n\":3}", false),
    ]
    .concat();
    connection.send(pipelined.as_bytes());

    let responses: Vec<_> = (0..3).map(|_| connection.read_response()).collect();

    assert!(responses.iter().all(|response| response.complete));
    assert_eq!(sse_events(&responses[0].text())[1].1["delta"], "one");
    assert_eq!(responses[1].status, 500);
    assert!(responses[2].text().contains("\"content\":\"three\""));
    let bodies: Vec<Value> = server
        .requests()
        .into_iter()
        .map(|request| request.body)
        .collect();
    assert_eq!(bodies, [json!({"n": 1}), json!({"n": 2}), json!({"n": 3})]);
}

#[test]
fn responses_helpers_match_openai_event_shapes() {
    let usage = responses::completed_with_usage("r", 10, 5, 15);
    assert_eq!(usage.kind, "response.completed");
    assert_eq!(
        usage.data["response"]["usage"],
        json!({"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
               "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15})
    );
    let failed = responses::failed("r", "boom");
    assert_eq!(
        failed.data["response"]["error"],
        json!({"code": "server_error", "message": "boom"})
    );
    assert_eq!(
        responses::reasoning_delta("hm").kind,
        "response.reasoning_summary_text.delta"
    );
}

#[tokio::test]
async fn starts_serves_and_stops_inside_an_async_test() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let server = MockModelServer::start();
    server.push(MockResponse::text_turn("async"));
    let mut stream = tokio::net::TcpStream::connect(server.address())
        .await
        .expect("connect");
    stream
        .write_all(post_request("/v1/responses", "{}", false).as_bytes())
        .await
        .expect("write");
    let mut received = Vec::new();
    stream.read_to_end(&mut received).await.expect("read");

    let text = String::from_utf8_lossy(&received);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(text.contains("\"delta\":\"async\""), "{text}");
    assert!(
        text.ends_with("0\r\n\r\n"),
        "clean chunked end expected: {text}"
    );
    drop(server);
}

#[test]
fn response_timings_span_from_request_read_to_last_frame_sent() {
    let server = MockModelServer::start();
    let gap = Duration::from_millis(40);
    server.push(MockResponse::text_turn("paced").delay_between(gap));
    let before = Instant::now();

    let response = post(server.address(), "/v1/responses", "{}");
    post(server.address(), "/v1/models", "");
    let after = Instant::now();

    assert!(response.complete);
    let timings = server.response_timings();
    assert_eq!(timings.len(), 1, "only routed, answered requests are timed");
    let timing = timings[0];
    assert_eq!(timing.request, 1);
    assert!(timing.received_at >= before);
    let finished = timing.finished_at.expect("a clean stream has finished");
    // Four frames, three gaps between them.
    assert!(finished - timing.received_at >= gap * 3);
    assert!(finished <= after);
}

#[test]
fn frame_times_are_recorded_only_when_asked_one_per_frame_in_order() {
    let server = MockModelServer::start();
    let gap = Duration::from_millis(20);
    server.push(MockResponse::text_turn("unrecorded"));
    server.push(MockResponse::text_turn("paced").delay_between(gap));
    post(server.address(), "/v1/responses", "{}");
    assert_eq!(server.frame_times(), [], "recording is off by default");

    server.record_frame_times(true);
    let before = Instant::now();
    let response = post(server.address(), "/v1/responses", "{}");
    let after = Instant::now();

    assert!(response.complete);
    let frames = server.frame_times();
    let sent = sse_events(&response.text()).len();
    assert_eq!(frames.len(), sent, "one time per frame: {frames:?}");
    for (index, frame) in frames.iter().enumerate() {
        assert_eq!((frame.request, frame.frame), (2, index));
        assert!(before <= frame.sent_at && frame.sent_at <= after);
    }
    for pair in frames.windows(2) {
        assert!(pair[1].sent_at - pair[0].sent_at >= gap, "{pair:?}");
    }
}

#[test]
fn requests_can_be_recorded_without_bodies_while_responders_still_see_them() {
    let server = MockModelServer::start();
    server.respond_with(|request| MockResponse::text_turn(request.body["input"].to_string()));
    server.keep_request_bodies(false);
    let dropped = post(server.address(), "/v1/responses", r#"{"input":"first"}"#);
    server.keep_request_bodies(true);
    post(server.address(), "/v1/responses", r#"{"input":"second"}"#);

    let answered = sse_events(&dropped.text());
    assert_eq!(answered[1].1["delta"], "\"first\"");
    let requests = server.requests();
    assert_eq!(requests[0].path, "/v1/responses");
    assert_eq!(requests[0].body, Value::Null);
    assert_eq!(requests[0].raw_body, "");
    assert_eq!(requests[1].body, json!({"input": "second"}));
}
