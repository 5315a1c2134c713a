//! `request_user_input`: the model asks the user questions through the front door (an
//! elicitation form, an app-server request, a prompt on a terminal). No answer — a door
//! that cannot ask, a timeout, a decline — is said to the model, and the turn goes on.

use deputy_protocol::{Question, Reply, UserInputOption, UserInputQuestion, UserInputRequest};
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::json;

use super::registry::{ToolCall, ToolHandler, ToolOutput};
use crate::client::ToolSpec;
use crate::context::{TurnContext, TurnStop, new_item_id};

/// The tool's name.
pub(crate) const NAME: &str = super::names::REQUEST_USER_INPUT;

/// Most questions one call may ask.
const MAX_QUESTIONS: usize = 8;

const DESCRIPTION: &str = "Asks the user one or more questions and waits for the answers. \
Use it only when you cannot go on without the user's choice; each question has an `id`, a short `header`, the `question` and the `options` to choose from (each a `label` and a `description`). \
The user may also answer in their own words, or not at all: then decide for yourself and say what you chose.";

/// Arguments of `request_user_input`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    questions: Vec<QuestionArg>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct QuestionArg {
    id: String,
    header: String,
    question: String,
    #[serde(default)]
    options: Vec<OptionArg>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OptionArg {
    label: String,
    #[serde(default)]
    description: String,
}

/// The `request_user_input` handler.
pub(crate) struct RequestUserInput;

impl ToolHandler for RequestUserInput {
    fn spec(&self) -> ToolSpec {
        ToolSpec::function(
            NAME,
            DESCRIPTION,
            json!({
                "type": "object",
                "properties": {
                    "questions": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "header": {"type": "string", "description": "A title of a few words."},
                                "id": {"type": "string", "description": "Names the question in the answers."},
                                "options": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        // As Codex 0.125 offers it: `description` is
                                        // required but not listed among the properties.
                                        "properties": {
                                            "label": {"type": "string", "description": "The choice, as the user picks it."}
                                        },
                                        "required": ["label", "description"],
                                        "additionalProperties": false
                                    }
                                },
                                "question": {"type": "string", "description": "The question."}
                            },
                            "required": ["id", "header", "question", "options"],
                            "additionalProperties": false
                        }
                    }
                },
                "required": ["questions"],
                "additionalProperties": false
            }),
        )
    }

    fn handle<'a>(
        &'a self,
        ctx: &'a TurnContext,
        call: ToolCall,
    ) -> BoxFuture<'a, Result<ToolOutput, TurnStop>> {
        Box::pin(async move {
            let args = match call.arguments::<Args>() {
                Ok(args) => args,
                Err(message) => return Ok(message.into()),
            };
            let questions = match questions(args) {
                Ok(questions) => questions,
                Err(message) => return Ok(message.into()),
            };
            let question = Question::UserInput(UserInputRequest {
                call_id: call.call_id.clone(),
                turn_id: ctx.turn_id.clone(),
                questions,
            });
            if ctx.cancel.is_cancelled() {
                return Err(TurnStop::Aborted);
            }
            let reply = ctx.ask(&new_item_id(), question).await;
            Ok(answer_text(reply).into())
        })
    }
}

/// The questions to ask, checked; `Err` is the text telling the model what is wrong.
fn questions(args: Args) -> Result<Vec<UserInputQuestion>, String> {
    if args.questions.is_empty() {
        return Err("request_user_input needs at least one question.".into());
    }
    if args.questions.len() > MAX_QUESTIONS {
        return Err(format!(
            "request_user_input takes at most {MAX_QUESTIONS} questions at a time."
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for q in args.questions {
        if q.id.trim().is_empty() || !seen.insert(q.id.clone()) {
            return Err(format!(
                "each question needs an id of its own; `{}` is empty or repeated.",
                q.id
            ));
        }
        out.push(UserInputQuestion {
            id: q.id,
            header: q.header,
            question: q.question,
            options: q
                .options
                .into_iter()
                .map(|o| UserInputOption {
                    label: o.label,
                    description: o.description,
                })
                .collect(),
        });
    }
    Ok(out)
}

/// What the model is told of the reply.
fn answer_text(reply: Reply) -> String {
    match reply {
        Reply::Answers { answers } => {
            let answers: serde_json::Map<String, serde_json::Value> = answers
                .into_iter()
                .map(|(id, answer)| (id, json!({"answers": [answer]})))
                .collect();
            json!({"answers": answers}).to_string()
        }
        Reply::Decision { reason, .. } => no_answer(reason),
        // A form's reply to a question that was not a form answers nothing.
        Reply::Form { .. } => no_answer(None),
    }
}

/// What the model is told when the user gave no answer, and why if known.
fn no_answer(reason: Option<String>) -> String {
    let why = reason.map_or_else(String::new, |reason| format!(" ({reason})"));
    format!(
        "The user gave no answer{why}. Go on without it: choose what seems best and say what you chose."
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use deputy_protocol::ApprovalDecision;

    use super::*;

    #[test]
    fn answers_and_their_absence_read_as_the_model_is_told() {
        let answers = BTreeMap::from([("db".to_string(), "sqlite".to_string())]);
        let text = answer_text(Reply::Answers { answers });
        assert_eq!(text, r#"{"answers":{"db":{"answers":["sqlite"]}}}"#);
        let none = answer_text(Reply::denied("the client cannot ask"));
        assert!(none.starts_with("The user gave no answer (the client cannot ask)"));
        let declined = answer_text(Reply::decided(ApprovalDecision::Denied));
        assert!(
            declined.starts_with("The user gave no answer."),
            "{declined}"
        );
    }

    #[test]
    fn bad_question_lists_are_refused_with_a_reason() {
        let q = |id: &str| QuestionArg {
            id: id.into(),
            header: "h".into(),
            question: "q".into(),
            options: Vec::new(),
        };
        assert!(questions(Args { questions: vec![] }).is_err());
        assert!(
            questions(Args {
                questions: vec![q("a"), q("a")]
            })
            .is_err()
        );
        assert!(
            questions(Args {
                questions: vec![q(" ")]
            })
            .is_err()
        );
        assert_eq!(
            questions(Args {
                questions: vec![q("a"), q("b")]
            })
            .map(|qs| qs.len()),
            Ok(2)
        );
    }
}
