//! Review mode: what is reviewed, and the structured findings a review ends with.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What a review looks at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ReviewTarget {
    /// Staged, unstaged and untracked changes against `HEAD`.
    UncommittedChanges,
    /// The changes since the merge base with `branch`.
    BaseBranch {
        /// The branch the work will merge into.
        branch: String,
    },
    /// One commit.
    Commit {
        /// The commit (any revision git understands).
        sha: String,
        /// Its title, when the caller knows it (shown to the user).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    /// Whatever the instructions ask for.
    Custom {
        /// What to review, in the user's words.
        instructions: String,
    },
}

/// A review to run (`entered_review_mode` carries it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewRequest {
    /// What is reviewed.
    pub target: ReviewTarget,
    /// Extra instructions for the reviewer, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The model to review with, instead of `review_model` / the session's model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// A short description for the user ("the uncommitted changes").
    pub user_facing_hint: String,
}

impl ReviewTarget {
    /// A short description of the target for the user.
    pub fn hint(&self) -> String {
        match self {
            Self::UncommittedChanges => "the uncommitted changes".to_string(),
            Self::BaseBranch { branch } => format!("the changes against `{branch}`"),
            Self::Commit {
                sha,
                title: Some(title),
            } => format!("commit {sha}: {title}"),
            Self::Commit { sha, title: None } => format!("commit {sha}"),
            Self::Custom { instructions } => instructions.clone(),
        }
    }
}

/// The structured result of a review.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReviewOutputEvent {
    /// What the reviewer found, most important first.
    #[serde(default)]
    pub findings: Vec<ReviewFinding>,
    /// `"patch is correct"` or `"patch is incorrect"` (empty when the answer could not be read).
    #[serde(default)]
    pub overall_correctness: String,
    /// Why, in a few sentences (the reviewer's raw answer when it could not be read).
    #[serde(default)]
    pub overall_explanation: String,
    /// How sure the reviewer is of the verdict, 0–1.
    #[serde(default)]
    pub overall_confidence_score: f64,
}

/// One problem the reviewer found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReviewFinding {
    /// A short imperative title (≤ 80 characters).
    pub title: String,
    /// Markdown: why it is a problem.
    pub body: String,
    /// How sure the reviewer is, 0–1.
    #[serde(default)]
    pub confidence_score: f64,
    /// 0 (drop everything) to 3 (nice to have).
    #[serde(default)]
    #[schemars(range(max = 3))]
    pub priority: u8,
    /// Where it is.
    pub code_location: ReviewCodeLocation,
}

/// Where a finding is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReviewCodeLocation {
    /// The file.
    pub absolute_file_path: PathBuf,
    /// The lines.
    pub line_range: ReviewLineRange,
}

/// A range of lines, 1-based and inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReviewLineRange {
    /// First line.
    pub start: u32,
    /// Last line.
    pub end: u32,
}

impl std::fmt::Display for ReviewLineRange {
    /// `start`, or `start-end` when the range spans lines.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.end > self.start {
            write!(f, "{}-{}", self.start, self.end)
        } else {
            write!(f, "{}", self.start)
        }
    }
}

/// Payload of `exited_review_mode`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExitedReviewModeEvent {
    /// The findings; `null` when the review was interrupted.
    pub review_output: Option<ReviewOutputEvent>,
}

/// How the explanation of a review that had no change to look at begins.
const NOTHING_TO_REVIEW: &str = "Nothing to review: ";

impl ReviewOutputEvent {
    /// The result of a review whose target holds no change (`what` says which), given
    /// without asking the model.
    pub fn nothing_to_review(what: &str) -> Self {
        Self {
            findings: Vec::new(),
            overall_correctness: "patch is correct".to_string(),
            overall_explanation: format!("{NOTHING_TO_REVIEW}no diff for {what}."),
            overall_confidence_score: 1.0,
        }
    }

    /// Whether this is [`ReviewOutputEvent::nothing_to_review`]'s result.
    pub fn is_nothing_to_review(&self) -> bool {
        self.findings.is_empty() && self.overall_explanation.starts_with(NOTHING_TO_REVIEW)
    }

    /// The findings as Markdown: the verdict and explanation, then each finding by
    /// priority with its `file:line` location.
    pub fn to_markdown(&self) -> String {
        let mut text = String::new();
        if !self.overall_correctness.is_empty() {
            text.push_str(&format!("**Verdict:** {}", self.overall_correctness));
            if self.overall_confidence_score > 0.0 {
                text.push_str(&format!(
                    " (confidence {:.2})",
                    self.overall_confidence_score
                ));
            }
            text.push_str("\n\n");
        }
        if !self.overall_explanation.trim().is_empty() {
            text.push_str(self.overall_explanation.trim());
            text.push_str("\n\n");
        }
        let mut findings: Vec<&ReviewFinding> = self.findings.iter().collect();
        findings.sort_by_key(|f| f.priority);
        if findings.is_empty() && !self.overall_correctness.is_empty() {
            text.push_str("No findings.\n");
        }
        for finding in findings {
            text.push_str(&format!(
                "- [P{}] {} — `{}:{}`\n",
                finding.priority,
                finding.title,
                finding.code_location.absolute_file_path.display(),
                finding.code_location.line_range
            ));
            for line in finding.body.trim().lines() {
                text.push_str(&format!("  {line}\n"));
            }
        }
        text.trim_end().to_string()
    }
}
