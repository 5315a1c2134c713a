//! Retries before the stream starts, and breaks after it started.

use std::time::Duration;

use pretty_assertions::assert_eq;

use super::*;

#[tokio::test]
async fn server_error_is_retried_and_on_retry_hears_attempt_one() {
    let server = TestServer::start(vec![
        Reply::Status(500, vec![], "{\"error\":{\"message\":\"boom\"}}"),
        Reply::Sse(responses_sse(&[completed("r")])),
    ])
    .await;
    let mut provider = provider(&server.base_url, WireApi::Responses);
    provider.request_max_retries = Some(3);
    let outcome = run(provider, &prompt(vec![])).await;

    assert_eq!(outcome.retries.len(), 1);
    assert_eq!(
        (outcome.retries[0].attempt, outcome.retries[0].max_retries),
        (1, 3)
    );
    assert_eq!(outcome.retries[0].reason, "model server returned 500: boom");
    assert!(outcome.retries[0].delay <= Duration::from_millis(220));
    assert_eq!(outcome.ok_events().len(), 1);
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn rate_limit_waits_the_retry_after_the_server_asks_for() {
    let server = TestServer::start(vec![
        Reply::Status(429, vec![("retry-after", "0")], "slow down"),
        Reply::Sse(responses_sse(&[completed("r")])),
    ])
    .await;
    let mut provider = provider(&server.base_url, WireApi::Responses);
    provider.request_max_retries = Some(1);
    let outcome = run(provider, &prompt(vec![])).await;

    assert_eq!(outcome.retries.len(), 1);
    assert_eq!(outcome.retries[0].delay, Duration::ZERO);
    assert_eq!(outcome.ok_events().len(), 1);
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn unauthorized_is_not_retried_and_keeps_the_provider_message() {
    let server = TestServer::start(vec![Reply::Status(
        401,
        vec![("content-type", "application/json")],
        "{\"error\":{\"message\":\"Incorrect API key provided\",\"type\":\"invalid_request_error\"}}",
    )])
    .await;
    let mut provider = provider(&server.base_url, WireApi::Responses);
    provider.request_max_retries = Some(3);
    let outcome = run(provider, &prompt(vec![])).await;

    assert!(outcome.retries.is_empty());
    let error = outcome.error();
    assert!(
        matches!(&error, ModelError::Http { status: 401, message } if message == "Incorrect API key provided"),
        "{error:?}"
    );
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn exhausted_retries_report_the_last_status_with_its_trimmed_body_text() {
    let reply = || {
        Reply::Status(
            503,
            vec![("retry-after-ms", "1")],
            "  upstream overloaded \n",
        )
    };
    let server = TestServer::start(vec![reply(), reply()]).await;
    let mut provider = provider(&server.base_url, WireApi::Chat);
    provider.request_max_retries = Some(1);
    let outcome = run(provider, &prompt(vec![])).await;

    assert_eq!(outcome.retries.len(), 1);
    assert_eq!(outcome.retries[0].delay, Duration::from_millis(1));
    let error = outcome.error();
    assert!(
        matches!(&error, ModelError::Http { status: 503, message } if message == "upstream overloaded"),
        "{error:?}"
    );
}

/// A local port nothing listens on.
async fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test]
async fn connect_error_is_retried_then_reported_as_connect() {
    let base_url = format!("http://127.0.0.1:{}/v1", closed_port().await);
    let mut provider = provider(&base_url, WireApi::Responses);
    provider.request_max_retries = Some(2);
    let outcome = run(provider, &prompt(vec![])).await;

    let attempts: Vec<u64> = outcome.retries.iter().map(|n| n.attempt).collect();
    assert_eq!(attempts, vec![1, 2]);
    // One short line per retry and at the end: the URL and the cause, not the chain.
    let first_retry = outcome.retries[0].reason.clone();
    assert_eq!(
        first_retry,
        format!("could not reach the model server at {base_url}/responses: Connection refused")
    );
    let error = outcome.error();
    assert!(matches!(error, ModelError::Connect(_)), "{error:?}");
    assert_eq!(error.to_string(), first_retry);
}

#[tokio::test]
async fn https_base_url_builds_and_fails_to_connect_cleanly() {
    let base_url = format!("https://127.0.0.1:{}/v1", closed_port().await);
    let error = run(provider(&base_url, WireApi::Responses), &prompt(vec![]))
        .await
        .error();

    assert!(matches!(error, ModelError::Connect(_)), "{error:?}");
}

#[tokio::test]
async fn stream_cut_mid_body_ends_with_one_stream_error() {
    let text = responses_sse(&[
        json!({"type": "response.created", "response": {"id": "r"}}),
        json!({"type": "response.output_text.delta", "delta": "Hi"}),
    ]);
    let server = TestServer::start(vec![Reply::SseThenDrop(text)]).await;
    let events = run(
        provider(&server.base_url, WireApi::Responses),
        &prompt(vec![]),
    )
    .await
    .events();

    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[0].as_ref().unwrap(), &ResponseEvent::Created);
    assert_eq!(
        events[1].as_ref().unwrap(),
        &ResponseEvent::OutputTextDelta("Hi".into())
    );
    assert!(
        matches!(events[2], Err(ModelError::Stream(_))),
        "{:?}",
        events[2]
    );
}

#[tokio::test]
async fn body_ending_before_completion_is_a_stream_error_for_both_wire_apis() {
    let responses = responses_sse(&[json!({"type": "response.created", "response": {"id": "r"}})]);
    let chat = "data: {\"id\":\"c\",\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n".to_owned();
    for (wire_api, text) in [(WireApi::Responses, responses), (WireApi::Chat, chat)] {
        let server = TestServer::start(vec![Reply::Sse(text)]).await;
        let events = run(provider(&server.base_url, wire_api), &prompt(vec![]))
            .await
            .events();

        let last = events.last().unwrap();
        assert!(
            matches!(last, Err(ModelError::Stream(m)) if m.contains("closed before")),
            "{last:?}"
        );
        assert_eq!(events.iter().filter(|e| e.is_err()).count(), 1);
    }
}

#[tokio::test]
async fn stalled_stream_hits_the_idle_timeout() {
    let text = responses_sse(&[json!({"type": "response.created", "response": {"id": "r"}})]);
    let server = TestServer::start(vec![Reply::SseThenStall(text)]).await;
    let mut provider = provider(&server.base_url, WireApi::Responses);
    provider.stream_idle_timeout_ms = Some(200);
    let events = run(provider, &prompt(vec![])).await.events();

    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0].as_ref().unwrap(), &ResponseEvent::Created);
    assert!(
        matches!(&events[1], Err(ModelError::Stream(m)) if m == "idle timeout: no data for 200 ms"),
        "{:?}",
        events[1]
    );
}

#[tokio::test]
async fn server_silent_before_headers_hits_the_idle_timeout_without_retrying() {
    let server = TestServer::start(vec![Reply::Silence]).await;
    let mut provider = provider(&server.base_url, WireApi::Chat);
    provider.stream_idle_timeout_ms = Some(200);
    provider.request_max_retries = Some(3);
    let outcome = run(provider, &prompt(vec![])).await;

    assert!(outcome.retries.is_empty());
    let error = outcome.error();
    assert!(
        matches!(&error, ModelError::Stream(m) if m == "idle timeout: no response for 200 ms"),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_request_too_long_for_the_window_is_context_window_exceeded_and_not_retried() {
    let server = TestServer::start(vec![Reply::Status(
        400,
        vec![("content-type", "application/json")],
        "{\"error\":{\"message\":\"Your input exceeds the context window of this model.\",\
         \"type\":\"invalid_request_error\",\"code\":\"context_length_exceeded\"}}",
    )])
    .await;
    let mut provider = provider(&server.base_url, WireApi::Responses);
    provider.request_max_retries = Some(3);
    let outcome = run(provider, &prompt(vec![])).await;

    assert!(outcome.retries.is_empty());
    let error = outcome.error();
    assert!(error.is_context_window_exceeded(), "{error:?}");
    assert_eq!(
        error.to_string(),
        "the conversation is too long for the model's context window: Your input exceeds the context window of this model."
    );
}

#[tokio::test]
async fn a_chat_servers_413_that_says_so_in_words_is_context_window_exceeded() {
    let server = TestServer::start(vec![Reply::Status(
        413,
        vec![],
        "{\"error\":{\"message\":\"prompt is too long: 40000 tokens > 32768 maximum\"}}",
    )])
    .await;
    let outcome = run(provider(&server.base_url, WireApi::Chat), &prompt(vec![])).await;

    assert!(outcome.error().is_context_window_exceeded());
}

#[tokio::test]
async fn another_bad_request_stays_an_http_error() {
    let server = TestServer::start(vec![Reply::Status(
        400,
        vec![],
        "{\"error\":{\"message\":\"Invalid value for 'model'\",\"code\":\"invalid_value\"}}",
    )])
    .await;
    let outcome = run(
        provider(&server.base_url, WireApi::Responses),
        &prompt(vec![]),
    )
    .await;

    let error = outcome.error();
    assert!(
        matches!(&error, ModelError::Http { status: 400, message } if message == "Invalid value for 'model'"),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_failed_response_for_the_context_window_is_context_window_exceeded() {
    let server = TestServer::start(vec![Reply::Sse(responses_sse(&[json!({
        "type": "response.failed",
        "response": {"id": "r", "error": {
            "code": "context_length_exceeded",
            "message": "Your input exceeds the context window of this model.",
        }},
    })]))])
    .await;
    let events = run(
        provider(&server.base_url, WireApi::Responses),
        &prompt(vec![]),
    )
    .await
    .events();

    assert!(
        matches!(events.last(), Some(Err(error)) if error.is_context_window_exceeded()),
        "{events:?}"
    );
}
