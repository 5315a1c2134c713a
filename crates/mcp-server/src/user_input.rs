//! The model's questions to the user (`request_user_input`) as an MCP elicitation form:
//! one string field per question, its options as the field's `enum`; the accepted form's
//! values are the answers, anything else is no answer.

use std::collections::BTreeMap;

use deputy_core::display::escape_line;
use deputy_protocol::{Reply, UserInputRequest};
use serde_json::{Value, json};

/// The form's message: each question under its header, for clients that show only it.
pub(crate) fn message(request: &UserInputRequest) -> String {
    let mut message = String::from("The agent asks:");
    for question in &request.questions {
        message.push_str(&format!(
            "\n{}: {}",
            escape_line(&question.header),
            escape_line(&question.question)
        ));
        for option in &question.options {
            message.push_str(&format!(
                "\n  - {}: {}",
                escape_line(&option.label),
                escape_line(&option.description)
            ));
        }
    }
    message
}

/// The form: one required string field per question, named by its id.
pub(crate) fn schema(request: &UserInputRequest) -> Value {
    let mut properties = serde_json::Map::new();
    for question in &request.questions {
        let mut field = json!({
            "type": "string",
            "title": question.header,
            "description": question.question,
        });
        if !question.options.is_empty() {
            field["enum"] = question
                .options
                .iter()
                .map(|option| Value::String(option.label.clone()))
                .collect();
        }
        properties.insert(question.id.clone(), field);
    }
    let required: Vec<&str> = request.questions.iter().map(|q| q.id.as_str()).collect();
    json!({"type": "object", "properties": properties, "required": required})
}

/// The reply for the client's answer to the form.
pub(crate) fn read_reply(request: &UserInputRequest, reply: &Value) -> Reply {
    match reply.get("action").and_then(Value::as_str) {
        Some("accept") => {
            let content = reply.get("content").and_then(Value::as_object);
            let answers: BTreeMap<String, String> = request
                .questions
                .iter()
                .filter_map(|question| {
                    let value = content?.get(&question.id)?;
                    let text = match value {
                        Value::String(text) => text.clone(),
                        Value::Null => return None,
                        other => other.to_string(),
                    };
                    (!text.trim().is_empty()).then(|| (question.id.clone(), text))
                })
                .collect();
            if answers.is_empty() {
                Reply::denied("the user accepted the form without answering")
            } else {
                Reply::Answers { answers }
            }
        }
        Some("decline") => Reply::denied("the user declined to answer"),
        Some("cancel") => Reply::denied("the user dismissed the questions"),
        _ => Reply::denied(format!(
            "the client's reply was not an elicitation result: {reply}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use deputy_protocol::{UserInputOption, UserInputQuestion};

    use super::*;

    fn request() -> UserInputRequest {
        UserInputRequest {
            call_id: "c".into(),
            turn_id: "u".into(),
            questions: vec![
                UserInputQuestion {
                    id: "db".into(),
                    header: "Database".into(),
                    question: "Which one?".into(),
                    options: vec![UserInputOption {
                        label: "sqlite".into(),
                        description: "a file".into(),
                    }],
                },
                UserInputQuestion {
                    id: "name".into(),
                    header: "Name".into(),
                    question: "What name?".into(),
                    options: Vec::new(),
                },
            ],
        }
    }

    #[test]
    fn each_question_is_a_field_and_options_are_its_enum() {
        let schema = schema(&request());
        assert_eq!(schema["properties"]["db"]["enum"], json!(["sqlite"]));
        assert_eq!(schema["properties"]["name"]["type"], json!("string"));
        assert!(schema["properties"]["name"].get("enum").is_none());
        assert_eq!(schema["required"], json!(["db", "name"]));
        assert!(message(&request()).contains("Database: Which one?"));
    }

    #[test]
    fn only_an_accepted_form_answers() {
        let accepted =
            json!({"action": "accept", "content": {"db": "sqlite", "name": "x", "other": "y"}});
        assert_eq!(
            read_reply(&request(), &accepted),
            Reply::Answers {
                answers: [("db".into(), "sqlite".into()), ("name".into(), "x".into())].into()
            }
        );
        for no in [
            json!({"action": "decline"}),
            json!({"action": "cancel"}),
            json!({"action": "accept", "content": {}}),
            json!({"decision": "approved"}),
        ] {
            assert!(
                matches!(read_reply(&request(), &no), Reply::Decision { .. }),
                "{no}"
            );
        }
    }
}
