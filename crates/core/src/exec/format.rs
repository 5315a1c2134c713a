//! The text a model reads about a finished command.

use super::ExecOutput;

/// Bytes per token assumed when turning a token limit into a byte budget.
const BYTES_PER_TOKEN: usize = 4;

/// Formats a finished command for the model: exit code, wall time and the
/// interleaved output, cut to about `token_limit` tokens keeping head and tail.
pub fn format_exec_output(output: &ExecOutput, token_limit: usize) -> String {
    let text = output.aggregated.to_text();
    let budget = token_limit.saturating_mul(BYTES_PER_TOKEN);
    let (body, cut) = truncate_middle(&text, budget);
    let mut formatted = format!(
        "Exit code: {}\nWall time: {:.1} seconds\n",
        output.exit_code,
        output.duration.as_secs_f64()
    );
    if output.timed_out {
        formatted.push_str(&format!(
            "Command timed out after {:.1} seconds; its process group was killed.\n",
            output.duration.as_secs_f64()
        ));
    }
    if cut > 0 || output.aggregated.dropped_bytes() > 0 {
        // Counted over the whole stream: the captured text lacks the dropped middle.
        formatted.push_str(&format!(
            "Total output lines: {}\n",
            output.aggregated.total_lines()
        ));
    }
    formatted.push_str("Output:\n");
    formatted.push_str(&body);
    formatted
}

/// Cuts `text` to at most about `max_bytes`, keeping the first and last
/// halves on character boundaries, with a marker saying how much was cut.
/// Returns the text and the number of bytes removed.
pub fn truncate_middle(text: &str, max_bytes: usize) -> (String, usize) {
    if text.len() <= max_bytes {
        return (text.to_string(), 0);
    }
    let half = max_bytes / 2;
    let head_end = floor_char_boundary(text, half);
    let tail_start = ceil_char_boundary(text, text.len() - half);
    let cut = tail_start - head_end;
    (
        format!(
            "{}\n[... {cut} bytes truncated ...]\n{}",
            &text[..head_end],
            &text[tail_start..]
        ),
        cut,
    )
}

fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

fn ceil_char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index += 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_untouched() {
        assert_eq!(truncate_middle("hello", 10), ("hello".to_string(), 0));
    }

    #[test]
    fn long_text_keeps_head_and_tail_with_marker() {
        let text = format!("{}{}{}", "a".repeat(10), "b".repeat(100), "c".repeat(10));
        let (out, cut) = truncate_middle(&text, 20);
        assert_eq!(cut, 100);
        assert_eq!(
            out,
            format!(
                "{}\n[... 100 bytes truncated ...]\n{}",
                "a".repeat(10),
                "c".repeat(10)
            )
        );
    }

    #[test]
    fn never_splits_a_character() {
        let text = "é".repeat(50);
        let (out, cut) = truncate_middle(&text, 11);
        assert_eq!(cut, 92);
        assert_eq!(out, "éé\n[... 92 bytes truncated ...]\néé");
    }
}
