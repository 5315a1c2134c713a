//! What a `session/prompt` asks for: its content blocks turned into the engine's input,
//! or one of the slash commands the agent announces (`/review`, `/compact`, `/init`).

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, ContentBlock, EmbeddedResourceResource,
    PromptCapabilities, UnstructuredCommandInput,
};
use deputy_protocol::{InputItem, ReviewRequest, ReviewTarget};

/// What the prompt capabilities say the agent accepts: text, embedded text resources and
/// images (sent to the model as `data:` URLs).
pub(crate) fn prompt_capabilities() -> PromptCapabilities {
    PromptCapabilities::new()
        .image(true)
        .audio(false)
        .embedded_context(true)
}

/// What the model is asked by `/init`.
const INIT_PROMPT: &str = "Create an AGENTS.md file at the root of this repository: a concise \
guide for coding agents working here. Look at the project first (its layout, build and test \
commands, languages, conventions visible in the code and configuration). Then write, in plain \
Markdown and under about 400 words: what the project is, how the code is organized, how to \
build, test and lint it (exact commands), the coding and naming conventions to follow, and \
anything an agent must not do. If an AGENTS.md already exists, improve it instead of replacing \
what is still true.";

/// The slash commands a prompt may start with.
pub(crate) fn available_commands() -> Vec<AvailableCommand> {
    vec![
        AvailableCommand::new(
            "review",
            "Review the uncommitted changes (or what you describe) and report findings",
        )
        .input(AvailableCommandInput::Unstructured(
            UnstructuredCommandInput::new("optional: what to review instead"),
        )),
        AvailableCommand::new(
            "compact",
            "Summarize the conversation so far to free up the model's context",
        ),
        AvailableCommand::new("init", "Write an AGENTS.md with instructions for agents"),
    ]
}

/// The work a prompt stands for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PromptWork {
    /// A turn with this input.
    Turn(Vec<InputItem>),
    /// A review (`/review`).
    Review(ReviewRequest),
    /// A compaction of the history (`/compact`).
    Compact,
}

/// Why a prompt cannot be run: said to the client as invalid params.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct BadPrompt(String);

/// The work `prompt` asks for.
pub(crate) fn prompt_work(prompt: &[ContentBlock]) -> Result<PromptWork, BadPrompt> {
    let mut parts = Vec::with_capacity(prompt.len());
    let mut items = Vec::with_capacity(prompt.len());
    for (index, block) in prompt.iter().enumerate() {
        let text = match block {
            ContentBlock::Text(text) => text.text.clone(),
            ContentBlock::ResourceLink(link) => format!("[@{}]({})", link.name, link.uri),
            ContentBlock::Resource(embedded) => match &embedded.resource {
                EmbeddedResourceResource::TextResourceContents(resource) => format!(
                    "<context ref=\"{}\">\n{}\n</context>",
                    resource.uri, resource.text
                ),
                EmbeddedResourceResource::BlobResourceContents(resource) => {
                    return Err(BadPrompt(format!(
                        "prompt block {index}: the binary resource {} cannot be read by the model \
                         (only text resources are accepted)",
                        resource.uri
                    )));
                }
                _ => {
                    return Err(unsupported(
                        index,
                        "an embedded resource of an unknown kind",
                    ));
                }
            },
            ContentBlock::Image(image) => {
                let url = match &image.uri {
                    Some(uri) if image.data.is_empty() => uri.clone(),
                    _ if image.data.is_empty() => {
                        return Err(BadPrompt(format!(
                            "prompt block {index}: an image with neither data nor a uri"
                        )));
                    }
                    _ => format!("data:{};base64,{}", image.mime_type, image.data),
                };
                items.push(InputItem::Image { url });
                continue;
            }
            ContentBlock::Audio(_) => {
                return Err(unsupported(
                    index,
                    "audio (promptCapabilities.audio is false)",
                ));
            }
            _ => return Err(unsupported(index, "a content block of an unknown type")),
        };
        parts.push(text.clone());
        items.push(InputItem::Text { text });
    }
    let has_image = items
        .iter()
        .any(|item| matches!(item, InputItem::Image { .. }));
    if !has_image && parts.iter().all(|part| part.trim().is_empty()) {
        return Err(BadPrompt("the prompt is empty".to_string()));
    }
    // A slash command is a prompt of text alone; with an image it is text for the model.
    let command = if has_image {
        None
    } else {
        slash_command(&parts)
    };
    Ok(command.unwrap_or(PromptWork::Turn(items)))
}

fn unsupported(index: usize, what: &str) -> BadPrompt {
    BadPrompt(format!(
        "prompt block {index} is {what}, which this agent does not accept"
    ))
}

/// The command the prompt's text starts with, if it names one of
/// [`available_commands`]; any other `/word` is text for the model.
fn slash_command(parts: &[String]) -> Option<PromptWork> {
    let first = parts.first()?.trim_start();
    let rest = first.strip_prefix('/')?;
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let args = std::iter::once(args)
        .chain(parts[1..].iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string();
    match name {
        "compact" => Some(PromptWork::Compact),
        "review" => {
            let target = if args.is_empty() {
                ReviewTarget::UncommittedChanges
            } else {
                ReviewTarget::Custom { instructions: args }
            };
            Some(PromptWork::Review(ReviewRequest {
                user_facing_hint: target.hint(),
                target,
                prompt: None,
                model: None,
            }))
        }
        "init" => {
            let mut text = INIT_PROMPT.to_string();
            if !args.is_empty() {
                text.push_str("\n\nAlso: ");
                text.push_str(&args);
            }
            Some(PromptWork::Turn(vec![InputItem::Text { text }]))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use agent_client_protocol::v1::schema::{
        BlobResourceContents, EmbeddedResource, ImageContent, ResourceLink, TextContent,
        TextResourceContents,
    };

    use super::*;

    fn text(t: &str) -> ContentBlock {
        ContentBlock::Text(TextContent::new(t))
    }

    fn texts(work: PromptWork) -> Vec<String> {
        match work {
            PromptWork::Turn(items) => items
                .into_iter()
                .map(|item| match item {
                    InputItem::Text { text } => text,
                    other => panic!("not text: {other:?}"),
                })
                .collect(),
            other => panic!("not a turn: {other:?}"),
        }
    }

    #[test]
    fn text_links_and_text_resources_become_the_turns_text() {
        let prompt = [
            text("Explain"),
            ContentBlock::ResourceLink(ResourceLink::new("main.rs", "file:///w/main.rs")),
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                    "fn main() {}",
                    "file:///w/main.rs",
                )),
            )),
        ];
        assert_eq!(
            texts(prompt_work(&prompt).unwrap()),
            [
                "Explain",
                "[@main.rs](file:///w/main.rs)",
                "<context ref=\"file:///w/main.rs\">\nfn main() {}\n</context>",
            ]
        );
    }

    #[test]
    fn an_image_block_becomes_a_data_url_image_beside_the_text() {
        let work = prompt_work(&[
            text("what is this?"),
            ContentBlock::Image(ImageContent::new("iVBORw0=", "image/png")),
        ])
        .unwrap();
        assert_eq!(
            work,
            PromptWork::Turn(vec![
                InputItem::Text {
                    text: "what is this?".into()
                },
                InputItem::Image {
                    url: "data:image/png;base64,iVBORw0=".into()
                },
            ])
        );
    }

    #[test]
    fn images_audio_blobs_and_empty_prompts_are_refused_with_the_reason() {
        let refusals = [
            (
                vec![
                    text("see"),
                    ContentBlock::Image(ImageContent::new("", "image/png")),
                ],
                "prompt block 1: an image with neither data nor a uri",
            ),
            (
                vec![ContentBlock::Resource(EmbeddedResource::new(
                    EmbeddedResourceResource::BlobResourceContents(BlobResourceContents::new(
                        "AA==",
                        "file:///w/a.bin",
                    )),
                ))],
                "binary resource file:///w/a.bin",
            ),
            (vec![text("  ")], "the prompt is empty"),
            (Vec::new(), "the prompt is empty"),
        ];
        for (prompt, expected) in refusals {
            let err = prompt_work(&prompt).unwrap_err().to_string();
            assert!(err.contains(expected), "{err}");
        }
    }

    #[test]
    fn slash_commands_become_their_work_and_other_slashes_stay_text() {
        assert_eq!(
            prompt_work(&[text("/compact")]).unwrap(),
            PromptWork::Compact
        );
        let PromptWork::Review(review) = prompt_work(&[text("/review")]).unwrap() else {
            panic!("not a review");
        };
        assert_eq!(review.target, ReviewTarget::UncommittedChanges);
        let PromptWork::Review(review) = prompt_work(&[text("/review the parser")]).unwrap() else {
            panic!("not a review");
        };
        assert_eq!(
            review.target,
            ReviewTarget::Custom {
                instructions: "the parser".into()
            }
        );
        let init = texts(prompt_work(&[text("/init")]).unwrap());
        assert!(init[0].contains("AGENTS.md"), "{init:?}");
        assert_eq!(
            texts(prompt_work(&[text("/usr/bin is odd")]).unwrap()),
            ["/usr/bin is odd"]
        );
    }
}
