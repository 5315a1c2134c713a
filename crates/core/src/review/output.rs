//! Reading the reviewer's final answer as structured findings.

use deputy_protocol::ReviewOutputEvent;

/// The findings in `answer`: the whole answer as JSON, else a fenced ```json block, else
/// the outermost `{…}` in it. An answer none of that reads as findings becomes an output
/// with no findings and the answer itself as `overall_explanation`.
pub fn parse_review_output(answer: &str) -> ReviewOutputEvent {
    let text = answer.trim();
    let candidates = [Some(text), fenced_json(text), outermost_object(text)];
    candidates
        .into_iter()
        .flatten()
        .find_map(|candidate| serde_json::from_str::<ReviewOutputEvent>(candidate).ok())
        .filter(|output| {
            // `{}` parses (every field has a default); a verdict or a finding makes it an answer.
            !output.overall_correctness.is_empty() || !output.findings.is_empty()
        })
        .unwrap_or_else(|| ReviewOutputEvent {
            overall_explanation: answer.to_string(),
            ..ReviewOutputEvent::default()
        })
}

/// The body of the first ```json (or bare ```) fenced block.
fn fenced_json(text: &str) -> Option<&str> {
    let start = text.find("```")?;
    let after = &text[start + 3..];
    let body_start = after.find('\n')? + 1;
    let body = &after[body_start..];
    let end = body.find("```")?;
    Some(body[..end].trim())
}

/// From the first `{` to the last `}`.
fn outermost_object(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    (start < end).then(|| &text[start..=end])
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANSWER: &str = r#"{"findings":[{"title":"Check the length","body":"It can be empty.","confidence_score":0.8,"priority":1,"code_location":{"absolute_file_path":"/w/a.rs","line_range":{"start":3,"end":4}}}],"overall_correctness":"patch is incorrect","overall_explanation":"One bug.","overall_confidence_score":0.7}"#;

    #[test]
    fn plain_fenced_and_wrapped_answers_all_parse() {
        for answer in [
            ANSWER.to_string(),
            format!("Here is my review:\n```json\n{ANSWER}\n```\nThanks."),
            format!("```\n{ANSWER}\n```"),
            format!("My review follows. {ANSWER} That is all."),
        ] {
            let output = parse_review_output(&answer);
            assert_eq!(output.overall_correctness, "patch is incorrect", "{answer}");
            assert_eq!(output.findings.len(), 1);
            assert_eq!(output.findings[0].code_location.line_range.end, 4);
        }
    }

    #[test]
    fn an_unreadable_answer_keeps_its_text_as_the_explanation() {
        for answer in ["Looks good to me!", "{}", "{\"findings\": 3}"] {
            let output = parse_review_output(answer);
            assert!(output.findings.is_empty());
            assert_eq!(output.overall_correctness, "");
            assert_eq!(output.overall_explanation, answer);
        }
    }
}
