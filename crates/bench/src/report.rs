//! Figures, their targets, and the two printed tables.

use std::fmt::Write as _;

use crate::target::{Kind, Target};

/// Whose figures a column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// An earlier deputy build (`--before`).
    Before,
    /// The deputy build under measurement.
    Deputy,
    /// Codex.
    Codex,
}

impl Column {
    /// The column of `target`'s figures.
    pub fn of(target: &Target) -> Self {
        match (target.kind, target.before) {
            (Kind::Deputy, true) => Column::Before,
            (Kind::Deputy, false) => Column::Deputy,
            (Kind::Codex, _) => Column::Codex,
        }
    }

    /// How the progress lines and the notes name the binary measured for it.
    pub fn name(self) -> &'static str {
        match self {
            Column::Before => "deputy (before)",
            Column::Deputy => "deputy",
            Column::Codex => "codex",
        }
    }
}

/// What a figure counts; every figure is "lower is better".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Milliseconds.
    Ms,
    /// Mebibytes.
    MiB,
    /// Kibibytes.
    KiB,
    /// A plain count.
    Count,
}

impl Unit {
    fn label(self) -> &'static str {
        match self {
            Unit::Ms => "ms",
            Unit::MiB => "MiB",
            Unit::KiB => "KiB",
            Unit::Count => "",
        }
    }

    /// `value` with as many decimals as its size deserves.
    pub fn format(self, value: f64) -> String {
        match self {
            Unit::Count => format!("{value:.0}"),
            _ if value.abs() >= 1000.0 => format!("{value:.0}"),
            _ if value.abs() >= 10.0 => format!("{value:.1}"),
            _ => format!("{value:.2}"),
        }
    }
}

/// The target a figure must meet, from the issue.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Goal {
    /// Informational only.
    None,
    /// deputy's median must be at most this.
    AtMost(f64),
    /// Codex's median divided by deputy's must be at least this.
    RatioAtLeast(f64),
}

impl Goal {
    fn describe(self, unit: Unit) -> String {
        match self {
            Goal::None => String::new(),
            Goal::AtMost(limit) => format!("<= {} {}", unit.format(limit), unit.label())
                .trim_end()
                .to_owned(),
            Goal::RatioAtLeast(ratio) => format!("codex/deputy >= {ratio}x"),
        }
    }
}

/// One measured value of one run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// The figure's name, unique within its workload.
    pub figure: &'static str,
    /// Its unit.
    pub unit: Unit,
    /// Its target.
    pub goal: Goal,
    /// The value.
    pub value: f64,
}

impl Sample {
    /// A figure in milliseconds.
    pub fn ms(figure: &'static str, goal: Goal, value: std::time::Duration) -> Self {
        Self {
            figure,
            unit: Unit::Ms,
            goal,
            value: value.as_secs_f64() * 1000.0,
        }
    }

    /// A figure in MiB, from KiB.
    pub fn mib(figure: &'static str, goal: Goal, kib: u64) -> Self {
        Self {
            figure,
            unit: Unit::MiB,
            goal,
            value: kib as f64 / 1024.0,
        }
    }

    /// A figure in KiB.
    pub fn kib(figure: &'static str, goal: Goal, kib: f64) -> Self {
        Self {
            figure,
            unit: Unit::KiB,
            goal,
            value: kib,
        }
    }

    /// A plain count.
    pub fn count(figure: &'static str, value: u64) -> Self {
        Self {
            figure,
            unit: Unit::Count,
            goal: Goal::None,
            value: value as f64,
        }
    }
}

/// One figure's values over all runs, for both servers.
#[derive(Debug, Clone)]
struct Row {
    workload: &'static str,
    figure: &'static str,
    unit: Unit,
    goal: Goal,
    before: Vec<f64>,
    deputy: Vec<f64>,
    codex: Vec<f64>,
}

impl Row {
    fn values(&self, column: Column) -> &[f64] {
        match column {
            Column::Before => &self.before,
            Column::Deputy => &self.deputy,
            Column::Codex => &self.codex,
        }
    }
}

/// Everything measured, in the order it was first seen.
#[derive(Debug, Default)]
pub struct Results {
    rows: Vec<Row>,
    notes: Vec<String>,
}

impl Results {
    /// Adds one run's samples to `column`.
    pub fn add(&mut self, workload: &'static str, column: Column, samples: &[Sample]) {
        for sample in samples {
            let index = match self
                .rows
                .iter()
                .position(|row| row.workload == workload && row.figure == sample.figure)
            {
                Some(index) => index,
                None => {
                    self.rows.push(Row {
                        workload,
                        figure: sample.figure,
                        unit: sample.unit,
                        goal: sample.goal,
                        before: Vec::new(),
                        deputy: Vec::new(),
                        codex: Vec::new(),
                    });
                    self.rows.len() - 1
                }
            };
            let row = &mut self.rows[index];
            match column {
                Column::Before => row.before.push(sample.value),
                Column::Deputy => row.deputy.push(sample.value),
                Column::Codex => row.codex.push(sample.value),
            }
        }
    }

    /// Notes that `workload` could not be measured on `target` (its name), and why.
    pub fn note(&mut self, workload: &str, target: &str, why: &str) {
        let first_line = why.lines().next().unwrap_or_default();
        let text = format!("{workload} on {target}: {first_line}");
        if !self.notes.contains(&text) {
            self.notes.push(text);
        }
    }

    /// Whether any figure of `column` was measured.
    fn has(&self, column: Column) -> bool {
        self.rows.iter().any(|row| !row.values(column).is_empty())
    }

    /// The main table: every figure with min / median / max per server (an earlier
    /// deputy's first, Codex's last, when measured) and the verdict on absolute targets.
    pub fn results_table(&self) -> String {
        let columns: Vec<(Column, &str)> = [
            (Column::Before, "deputy before: min / median / max"),
            (Column::Deputy, "deputy min / median / max"),
            (Column::Codex, "codex min / median / max"),
        ]
        .into_iter()
        .filter(|(column, _)| *column == Column::Deputy || self.has(*column))
        .collect();
        let mut header = vec!["workload", "figure"];
        header.extend(columns.iter().map(|(_, title)| *title));
        header.extend(["target", "met"]);
        let mut lines = Vec::new();
        for row in &self.rows {
            let mut cells = vec![row.workload.to_owned(), with_unit(row.figure, row.unit)];
            cells.extend(
                columns
                    .iter()
                    .map(|(column, _)| spread(row.unit, row.values(*column))),
            );
            let (target, met) = match row.goal {
                Goal::AtMost(limit) => (
                    row.goal.describe(row.unit),
                    verdict(median(&row.deputy).map(|m| m <= limit)),
                ),
                Goal::RatioAtLeast(_) => ("see comparison".to_owned(), String::new()),
                Goal::None => (String::new(), String::new()),
            };
            cells.extend([target, met]);
            lines.push(cells);
        }
        render(&header, &lines) + &self.notes_text()
    }

    /// The comparison: medians side by side (an earlier deputy's, when measured), Codex's
    /// ratio to deputy's, and the relative targets.
    pub fn comparison_table(&self) -> String {
        let with_before = self.has(Column::Before);
        let mut header = vec!["workload", "figure"];
        if with_before {
            header.push("before median");
        }
        header.extend([
            "deputy median",
            "codex median",
            "codex/deputy",
            "target",
            "met",
        ]);
        let mut lines = Vec::new();
        for row in &self.rows {
            let deputy = median(&row.deputy);
            let codex = median(&row.codex);
            let ratio = match (deputy, codex) {
                (Some(d), Some(c)) if d > 0.0 => Some(c / d),
                _ => None,
            };
            let (target, met) = match row.goal {
                Goal::RatioAtLeast(want) => (
                    row.goal.describe(row.unit),
                    verdict(ratio.map(|r| r >= want)),
                ),
                Goal::AtMost(limit) => (
                    row.goal.describe(row.unit),
                    verdict(deputy.map(|m| m <= limit)),
                ),
                Goal::None => (String::new(), String::new()),
            };
            let shown = |value: Option<f64>| value.map_or("-".to_owned(), |v| row.unit.format(v));
            let mut cells = vec![row.workload.to_owned(), with_unit(row.figure, row.unit)];
            if with_before {
                cells.push(shown(median(&row.before)));
            }
            cells.extend([
                shown(deputy),
                shown(codex),
                ratio.map_or("-".to_owned(), |r| format!("{r:.1}x")),
                target,
                met,
            ]);
            lines.push(cells);
        }
        render(&header, &lines) + &self.notes_text()
    }

    fn notes_text(&self) -> String {
        let mut text = String::new();
        for note in &self.notes {
            let _ = writeln!(text, "  note: {note}");
        }
        text
    }
}

fn with_unit(figure: &str, unit: Unit) -> String {
    match unit {
        Unit::Count => figure.to_owned(),
        unit => format!("{figure} ({})", unit.label()),
    }
}

fn verdict(ok: Option<bool>) -> String {
    match ok {
        Some(true) => "yes".to_owned(),
        Some(false) => "NO".to_owned(),
        None => "-".to_owned(),
    }
}

fn spread(unit: Unit, values: &[f64]) -> String {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match (sorted.first(), median(&sorted), sorted.last()) {
        (Some(min), Some(mid), Some(max)) => format!(
            "{} / {} / {}",
            unit.format(*min),
            unit.format(mid),
            unit.format(*max)
        ),
        _ => "-".to_owned(),
    }
}

/// The median of `values`; the mean of the middle two for an even count.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// The `q`-quantile (0..=1) of `values` by nearest rank.
pub fn percentile(values: &[f64], q: f64) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    if sorted.is_empty() {
        return None;
    }
    let rank = (q.clamp(0.0, 1.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// Left-aligned columns separated by two spaces, with a rule under the header.
fn render(header: &[&str], lines: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for line in lines {
        for (width, cell) in widths.iter_mut().zip(line) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut text = String::new();
    let mut push_line = |cells: Vec<String>| {
        let mut out = String::new();
        for (cell, width) in cells.iter().zip(&widths) {
            let _ = write!(out, "{cell:<width$}  ");
        }
        text.push_str(out.trim_end());
        text.push('\n');
    };
    push_line(header.iter().map(|h| (*h).to_owned()).collect());
    push_line(widths.iter().map(|w| "-".repeat(*w)).collect());
    for line in lines {
        push_line(line.clone());
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_percentile_of_small_sets() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&hundred, 0.5), Some(50.0));
        assert_eq!(percentile(&hundred, 0.99), Some(99.0));
        assert_eq!(percentile(&hundred, 1.0), Some(100.0));
        assert_eq!(percentile(&[7.0], 0.99), Some(7.0));
    }

    #[test]
    fn tables_show_spread_ratio_and_verdicts() {
        let mut results = Results::default();
        let goal = Goal::AtMost(15.0);
        for value in [5.0, 6.0, 9.0] {
            results.add(
                "cold-start",
                Column::Deputy,
                &[Sample {
                    figure: "to tools/list",
                    unit: Unit::Ms,
                    goal,
                    value,
                }],
            );
        }
        results.add(
            "cold-start",
            Column::Codex,
            &[Sample {
                figure: "to tools/list",
                unit: Unit::Ms,
                goal,
                value: 120.0,
            }],
        );
        results.note("resume", "codex", "unsupported: Session not found\nmore");

        let main = results.results_table();
        let row = main.lines().nth(2).unwrap_or_default();
        assert!(row.starts_with("cold-start  to tools/list (ms)"), "{main}");
        assert!(row.contains("5.00 / 6.00 / 9.00"), "{main}");
        assert!(row.contains("120.0 / 120.0 / 120.0"), "{main}");
        assert!(row.contains("<= 15.0 ms"), "{main}");
        assert!(row.ends_with("yes"), "{main}");
        assert!(main.ends_with("  note: resume on codex: unsupported: Session not found\n"));

        let comparison = results.comparison_table();
        let row = comparison.lines().nth(2).unwrap_or_default();
        assert!(row.contains("6.00"), "{comparison}");
        assert!(row.contains("20.0x"), "{comparison}");
    }

    #[test]
    fn an_earlier_build_gets_its_own_columns_first() {
        let mut results = Results::default();
        let sample = |value| Sample {
            figure: "peak RSS",
            unit: Unit::MiB,
            goal: Goal::AtMost(6.0),
            value,
        };
        results.add("cold-start", Column::Before, &[sample(14.0)]);
        results.add("cold-start", Column::Deputy, &[sample(5.0)]);
        let main = results.results_table();
        let header = main.lines().next().unwrap_or_default();
        assert!(
            header.find("deputy before") < header.find("deputy min"),
            "{main}"
        );
        assert!(!header.contains("codex"), "{main}");
        let row = main.lines().nth(2).unwrap_or_default();
        assert!(row.contains("14.0 / 14.0 / 14.0"), "{main}");
        assert!(row.ends_with("yes"), "{main}");
        let comparison = results.comparison_table();
        assert!(
            comparison
                .lines()
                .next()
                .unwrap_or_default()
                .contains("before median")
        );
        assert!(
            comparison
                .lines()
                .nth(2)
                .unwrap_or_default()
                .contains("14.0"),
            "{comparison}"
        );
    }
}
