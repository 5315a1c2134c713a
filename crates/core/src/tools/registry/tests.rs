//! The registry: the tools offered by default, tools added to a thread through the
//! registry alone (test-only handlers), and how calls reach them on both wire APIs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use deputy_protocol::ThreadEventMsg;
use deputy_test_support::{MockModelServer, MockResponse, SseEvent, TestHome, chat, responses};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::*;
use crate::ThreadManager;
use crate::client::{FreeformTool, FunctionTool, Grammar, NamespaceTool};
use crate::config::ConfigLayers;
use crate::context::ToolState;
use crate::rollout::SessionSource;

const PNG_URL: &str = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUg==";

/// Looks a word up: answers with text and an image, and counts its calls in the thread.
struct Lookup;

/// What [`Lookup`] keeps in its thread.
#[derive(Default)]
struct LookupCalls(AtomicU64);

impl ToolHandler for Lookup {
    fn spec(&self) -> ToolSpec {
        ToolSpec::function(
            "lookup_word",
            "Looks a word up.",
            json!({"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}),
        )
    }

    fn handle<'a>(
        &'a self,
        ctx: &'a TurnContext,
        call: ToolCall,
    ) -> BoxFuture<'a, Result<ToolOutput, TurnStop>> {
        #[derive(Deserialize)]
        struct Args {
            word: String,
        }
        Box::pin(async move {
            let args: Args = match call.arguments() {
                Ok(args) => args,
                Err(message) => return Ok(message.into()),
            };
            let calls = ctx.session.tool_state.get::<LookupCalls>();
            let n = calls.0.fetch_add(1, Ordering::SeqCst) + 1;
            Ok(FunctionOutput::Content(vec![
                OutputContentItem::InputText {
                    text: format!("{}: a joint (call {n})", args.word),
                },
                OutputContentItem::InputImage {
                    image_url: PNG_URL.into(),
                },
            ]))
        })
    }
}

/// A namespace of one function, echoing how it was called.
struct Docs;

impl ToolHandler for Docs {
    fn spec(&self) -> ToolSpec {
        ToolSpec::Namespace(NamespaceTool {
            name: "mcp__docs__".into(),
            description: "The project's documents.".into(),
            tools: vec![FunctionTool {
                name: "search".into(),
                description: "Searches the documents.".into(),
                parameters: Arc::new(
                    json!({"type": "object", "properties": {"q": {"type": "string"}}}),
                ),
            }],
        })
    }

    fn handle<'a>(
        &'a self,
        _ctx: &'a TurnContext,
        call: ToolCall,
    ) -> BoxFuture<'a, Result<ToolOutput, TurnStop>> {
        Box::pin(async move {
            let ToolPayload::Function { arguments } = &call.payload else {
                return Ok("expected JSON arguments".into());
            };
            let namespace = call.namespace.as_deref().unwrap_or("none");
            Ok(format!("{namespace}/{}: {arguments}", call.name).into())
        })
    }
}

/// A freeform tool taking a line of text.
struct Note;

impl ToolHandler for Note {
    fn spec(&self) -> ToolSpec {
        ToolSpec::Freeform(FreeformTool {
            name: "note".into(),
            description: "Writes a note.".into(),
            grammar: Some(Grammar {
                syntax: "lark".into(),
                definition: "start: /.+/".into(),
            }),
        })
    }

    fn handle<'a>(
        &'a self,
        _ctx: &'a TurnContext,
        call: ToolCall,
    ) -> BoxFuture<'a, Result<ToolOutput, TurnStop>> {
        Box::pin(async move {
            Ok(match call.payload {
                ToolPayload::Freeform { input } => format!("noted: {input}").into(),
                ToolPayload::Function { .. } => "expected text".into(),
            })
        })
    }
}

fn test_tools() -> [Arc<dyn ToolHandler>; 3] {
    [Arc::new(Lookup), Arc::new(Docs), Arc::new(Note)]
}

fn default_tools(fixture: &str) -> Value {
    serde_json::from_str(fixture).unwrap()
}

/// The classic built-in tools for a model that takes images (`view_image` aside) and for
/// one deputy does not know.
fn registries() -> [ToolRegistry; 2] {
    ["gpt-4o", "mock-model"].map(|model| {
        let mut family = ModelFamily::builtin(model);
        family.view_image_tool = false;
        ToolRegistry::for_turn(&family, &ThreadTools::default())
    })
}

#[test]
fn the_built_in_tools_are_offered_exactly_as_before_the_registry() {
    for registry in registries() {
        let responses: Vec<Value> = registry
            .specs()
            .iter()
            .map(ToolSpec::responses_json)
            .collect();
        let chat: Vec<Value> = registry
            .specs()
            .iter()
            .flat_map(ToolSpec::chat_json)
            .collect();
        assert_eq!(
            Value::Array(responses),
            default_tools(include_str!("default_tools.responses.json"))
        );
        assert_eq!(
            Value::Array(chat),
            default_tools(include_str!("default_tools.chat.json"))
        );
    }
    let mut family = ModelFamily::builtin("mock-model");
    family.plan_tool = false;
    let names: Vec<String> = ToolRegistry::for_turn(&family, &ThreadTools::default())
        .specs()
        .iter()
        .filter_map(|spec| spec.name().map(str::to_string))
        .collect();
    assert_eq!(names, ["shell", "shell_command", "apply_patch"]);
}

#[test]
fn a_name_is_taken_once_and_a_thread_tool_never_replaces_a_built_in_one() {
    let thread = ThreadTools::default();
    thread.add(Arc::new(Lookup)).unwrap();
    assert_eq!(
        thread.add(Arc::new(Lookup)),
        Err(ToolRegistryError::Duplicate("lookup_word".into()))
    );
    struct FakeShell;
    impl ToolHandler for FakeShell {
        fn spec(&self) -> ToolSpec {
            ToolSpec::function("shell", "Not the real one.", json!({"type": "object"}))
        }
        fn handle<'a>(
            &'a self,
            _ctx: &'a TurnContext,
            _call: ToolCall,
        ) -> BoxFuture<'a, Result<ToolOutput, TurnStop>> {
            Box::pin(async { Ok("fake".into()) })
        }
    }
    thread.add(Arc::new(FakeShell)).unwrap();
    let specs = ToolRegistry::for_turn(&ModelFamily::builtin("mock-model"), &thread).specs();
    let shells: Vec<&ToolSpec> = specs
        .iter()
        .filter(|spec| spec.name() == Some("shell"))
        .collect();
    assert_eq!(shells.len(), 1);
    assert!(
        !matches!(shells[0], ToolSpec::Function(tool) if tool.description == "Not the real one.")
    );
    assert_eq!(specs.last().and_then(ToolSpec::name), Some("lookup_word"));
}

#[test]
fn hosted_tools_are_offered_in_their_place_and_have_no_handler() {
    let [mut registry, _] = registries();
    registry.offer_hosted(HostedTool::WebSearch {
        external_web_access: true,
    });
    registry.register(Arc::new(Note)).unwrap();
    let listed: Vec<Value> = registry
        .specs()
        .iter()
        .map(ToolSpec::responses_json)
        .collect();
    assert_eq!(
        listed[4..],
        [
            json!({"type": "web_search", "external_web_access": true}),
            Note.spec().responses_json()
        ]
    );
    struct Hosted;
    impl ToolHandler for Hosted {
        fn spec(&self) -> ToolSpec {
            ToolSpec::Hosted(HostedTool::WebSearch {
                external_web_access: false,
            })
        }
        fn handle<'a>(
            &'a self,
            _ctx: &'a TurnContext,
            _call: ToolCall,
        ) -> BoxFuture<'a, Result<ToolOutput, TurnStop>> {
            Box::pin(async { Ok("never".into()) })
        }
    }
    assert_eq!(
        registry.register(Arc::new(Hosted)),
        Err(ToolRegistryError::Hosted)
    );
}

#[test]
fn images_reach_only_a_model_that_takes_them() {
    let output = FunctionOutput::Content(vec![
        OutputContentItem::InputText {
            text: "chart".into(),
        },
        OutputContentItem::InputImage {
            image_url: PNG_URL.into(),
        },
    ]);
    let [takes_images, takes_none] = registries();
    assert_eq!(takes_images.fit_for_model(output.clone()), output);
    assert_eq!(
        takes_none.fit_for_model(output).text(),
        format!("chart\n{IMAGE_OMITTED}")
    );
}

#[test]
fn thread_state_is_one_value_per_type() {
    let state = ToolState::default();
    state.get::<LookupCalls>().0.fetch_add(5, Ordering::SeqCst);
    assert_eq!(state.get::<LookupCalls>().0.load(Ordering::SeqCst), 5);
    assert_eq!(*state.get::<String>(), "");
}

const WAIT: Duration = Duration::from_secs(30);

/// A thread of `model` at the mock server of `home`, with the test tools added.
async fn thread_with_test_tools(
    home: &TestHome,
    manager: &ThreadManager,
    model: &str,
) -> Arc<crate::Thread> {
    let mut layers = ConfigLayers::new(home.path().to_path_buf());
    layers.overrides.cwd = Some(home.workspace().to_path_buf());
    layers.overrides.model = Some(model.to_string());
    let thread = manager.start(layers.load().unwrap()).await.unwrap();
    for tool in test_tools() {
        thread.add_tool(tool).unwrap();
    }
    thread
}

/// Runs a turn to its end and says how it ended.
async fn run_turn(thread: &crate::Thread, text: &str) -> ThreadEventMsg {
    let mut events = thread.start_turn("s".into(), text.into()).unwrap();
    let end = async {
        let mut last = None;
        while let Some(event) = events.next().await {
            last = Some(event.msg.clone());
        }
        last
    };
    tokio::time::timeout(WAIT, end).await.unwrap().unwrap()
}

/// The input item of `kind` answering or making call `call_id`.
fn item<'a>(request: &'a Value, kind: &str, call_id: &str) -> &'a Value {
    request["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == kind && item["call_id"] == call_id)
        .unwrap_or_else(|| panic!("no {kind} {call_id} in {request:#}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_added_through_the_registry_is_offered_and_its_output_returned() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    server.push_all([
        MockResponse::sse(vec![
            responses::created("r1"),
            responses::function_call("c1", "lookup_word", r#"{"word":"seam"}"#),
            SseEvent::new(
                "response.output_item.done",
                json!({"item": {"type": "function_call", "call_id": "c2", "namespace": "mcp__docs__",
                    "name": "search", "arguments": "{\"q\":\"registry\"}"}}),
            ),
            SseEvent::new(
                "response.output_item.done",
                json!({"item": {"type": "custom_tool_call", "id": "ctc_1", "call_id": "c3",
                    "name": "note", "input": "buy milk"}}),
            ),
            responses::completed("r1"),
        ]),
        MockResponse::text_turn("Looked it up."),
        MockResponse::function_call_turn("c4", "lookup_word", json!({"word": "joint"})),
        MockResponse::text_turn("Again."),
    ]);
    let manager = ThreadManager::new(None, SessionSource::Exec);
    let thread = thread_with_test_tools(&home, &manager, "gpt-4o").await;

    assert!(matches!(
        run_turn(&thread, "look up seam").await,
        ThreadEventMsg::TurnComplete(_)
    ));
    assert!(matches!(
        run_turn(&thread, "and joint").await,
        ThreadEventMsg::TurnComplete(_)
    ));

    let requests = server.wait_for_requests(4, WAIT).unwrap();
    let offered = requests[0].body["tools"].as_array().unwrap();
    let names: Vec<&str> = offered.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "shell",
            "shell_command",
            "apply_patch",
            "update_plan",
            "view_image",
            "lookup_word",
            "mcp__docs__",
            "note"
        ]
    );
    assert_eq!(
        offered[5..],
        test_tools().map(|tool| tool.spec().responses_json())
    );
    assert_eq!(requests[2].body["tools"], requests[0].body["tools"]);

    let second = &requests[1].body;
    assert_eq!(
        item(second, "function_call_output", "c1")["output"],
        json!([{"type": "input_text", "text": "seam: a joint (call 1)"},
            {"type": "input_image", "image_url": PNG_URL}])
    );
    assert_eq!(
        item(second, "function_call", "c2")["namespace"],
        "mcp__docs__"
    );
    assert_eq!(
        item(second, "function_call_output", "c2")["output"],
        "mcp__docs__/search: {\"q\":\"registry\"}"
    );
    assert_eq!(item(second, "custom_tool_call", "c3")["input"], "buy milk");
    assert_eq!(
        item(second, "custom_tool_call_output", "c3")["output"],
        "noted: buy milk"
    );
    // The tool's state lives in the thread: the next turn's call is its second.
    assert_eq!(
        item(&requests[3].body, "function_call_output", "c4")["output"][0]["text"],
        "joint: a joint (call 2)"
    );
    manager.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_chat_a_namespace_is_flat_names_and_a_freeform_tool_a_function_taking_input() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    home.write_config(
        &TestHome::default_config(&server.base_url())
            .replace("wire_api = \"responses\"", "wire_api = \"chat\""),
    );
    server.push_all([
        MockResponse::chat(vec![
            chat::tool_call_start(0, "c1", "lookup_word"),
            chat::tool_call_args(0, r#"{"word":"seam"}"#),
            chat::tool_call_start(1, "c2", "mcp__docs__search"),
            chat::tool_call_args(1, r#"{"q":"registry"}"#),
            chat::tool_call_start(2, "c3", "note"),
            chat::tool_call_args(2, r#"{"input":"buy milk"}"#),
            chat::finish("tool_calls"),
        ]),
        MockResponse::chat_text_turn("Done."),
    ]);
    let manager = ThreadManager::new(None, SessionSource::Exec);
    // A model deputy does not know takes no images.
    let thread = thread_with_test_tools(&home, &manager, "mock-model").await;

    assert!(matches!(
        run_turn(&thread, "look up seam").await,
        ThreadEventMsg::TurnComplete(_)
    ));

    let requests = server.wait_for_requests(2, WAIT).unwrap();
    let offered = requests[0].body["tools"].as_array().unwrap();
    let names: Vec<&str> = offered
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(names[4..], ["lookup_word", "mcp__docs__search", "note"]);
    assert_eq!(
        offered[6]["function"]["parameters"]["required"],
        json!(["input"])
    );
    let messages = requests[1].body["messages"].as_array().unwrap();
    let tool_message = |id: &str| {
        messages
            .iter()
            .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
            .unwrap_or_else(|| panic!("no tool message {id}: {messages:#?}"))["content"]
            .clone()
    };
    assert_eq!(
        tool_message("c1"),
        format!("seam: a joint (call 1)\n{IMAGE_OMITTED}")
    );
    assert_eq!(
        tool_message("c2"),
        "mcp__docs__/search: {\"q\":\"registry\"}"
    );
    assert_eq!(tool_message("c3"), "noted: buy milk");
    manager.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_of_a_tool_that_is_not_offered_is_told_what_is() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    server.push_all([
        MockResponse::function_call_turn("c1", "browse", json!({})),
        MockResponse::text_turn("Sorry."),
    ]);
    let manager = ThreadManager::new(None, SessionSource::Exec);
    let thread = thread_with_test_tools(&home, &manager, "mock-model").await;

    run_turn(&thread, "browse").await;

    let requests = server.wait_for_requests(2, WAIT).unwrap();
    assert_eq!(
        item(&requests[1].body, "function_call_output", "c1")["output"],
        "unsupported call: `browse` is not a tool here; available tools: shell, shell_command, \
         apply_patch, update_plan, lookup_word, mcp__docs__search, note"
    );
    manager.shutdown_all().await;
}
