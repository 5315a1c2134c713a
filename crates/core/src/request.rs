//! What every request of a turn carries besides the conversation: the tools the model's
//! family is offered, deputy's instructions written for them, and the request fields that
//! keep a reasoning model's state and the provider's prompt cache (reasoning effort and
//! summary, the encrypted reasoning asked back, the thread id as `prompt_cache_key`,
//! verbosity). Also the first request a new thread would send, for
//! `deputy debug model-request`.

use std::sync::Arc;

use deputy_protocol::ResponseItem;
use serde_json::{Value, json};

use crate::client::{ModelClient, ModelError, Prompt, ToolSpec};
use crate::config::{Config, ReasoningSummary};
use crate::context::TurnContext;
use crate::model_family::ModelFamily;
use crate::tools::{ThreadTools, ToolRegistry};

/// The registry of a turn whose thread added `thread_tools`, and the prompt each of its
/// requests starts from (no input).
pub(crate) fn for_turn(ctx: &TurnContext, thread_tools: &ThreadTools) -> (ToolRegistry, Prompt) {
    let family = ModelFamily::for_config(&ctx.config);
    let tools = ToolRegistry::for_turn(&family, thread_tools);
    let prompt = base_prompt(
        &ctx.config,
        &family,
        ctx.session.log.thread_id(),
        tools.specs(),
    );
    (tools, prompt)
}

/// The prompt a request of `config`'s model starts from, offering `tools`.
pub(crate) fn base_prompt(
    config: &Config,
    family: &ModelFamily,
    thread_id: &str,
    tools: Vec<ToolSpec>,
) -> Prompt {
    let instructions = match &family.custom_instructions {
        Some(custom) => Arc::from(custom.as_str()),
        None => crate::base_instructions::for_tools(&tools),
    };
    let summary = config
        .model_reasoning_summary
        .unwrap_or(ReasoningSummary::Auto);
    Prompt {
        instructions,
        input: Vec::new(),
        tools: tools.into(),
        parallel_tool_calls: family.parallel_tool_calls,
        output_schema: None,
        reasoning_effort: config.model_reasoning_effort.clone(),
        reasoning_summary: (family.reasoning && summary != ReasoningSummary::None)
            .then(|| summary.as_str().to_string()),
        // `store` is always false: a reasoning model's state survives only if it is asked
        // back, encrypted, and sent with every later request.
        include_encrypted_reasoning: family.reasoning,
        prompt_cache_key: Some(thread_id.to_string()),
        verbosity: config.model_verbosity.map(|v| v.as_str().to_string()),
    }
}

/// The client and the prompt of the first request a new thread of `config` would send for
/// `prompt` (built-in tools, instructions, initial context, project docs, the prompt).
pub async fn first_prompt(
    config: &Config,
    prompt: &str,
) -> Result<(ModelClient, Prompt), ModelError> {
    let family = ModelFamily::for_config(config);
    let tools = ToolRegistry::for_turn(&family, &ThreadTools::default()).specs();
    let thread_id = uuid::Uuid::now_v7().to_string();
    let mut request = base_prompt(config, &family, &thread_id, tools);
    let mut input = crate::instructions::initial_context(config);
    let (project_docs, _) = crate::instructions::project_instructions(config).await;
    input.extend(project_docs);
    input.push(ResponseItem::user_text(prompt));
    request.input = input;
    let client = ModelClient::new(config.model_provider.clone(), config.model.clone())?;
    Ok((client, request))
}

/// The first request a new thread of `config` would send for `prompt`: its endpoint, its
/// headers with every value that may be a secret replaced, and its body (nothing is sent).
pub async fn first_request(config: &Config, prompt: &str) -> Result<Value, ModelError> {
    let (client, request) = first_prompt(config, prompt).await?;
    let (url, headers) = client.shown_request_head();
    let headers: serde_json::Map<String, Value> = headers
        .into_iter()
        .map(|(name, value)| (name, Value::String(value)))
        .collect();
    Ok(json!({
        "method": "POST",
        "url": url,
        "headers": headers,
        "body": client.request_body(&request),
    }))
}
