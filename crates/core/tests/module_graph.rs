//! core's modules form a DAG: the types a turn is written against (`context`) sit
//! below everything that runs turns, and no module reaches back up. Read from the
//! source: every `crate::…` path outside comments and unit tests is an edge from the
//! file's top-level module to the one it names.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a file that cannot be read fails the test"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file belongs to (`tools/patch.rs` → `tools`); `None` for
/// `lib.rs` and for files that hold only tests.
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next()?.as_os_str().to_string_lossy();
    let name = first.trim_end_matches(".rs").to_string();
    let is_test = rel.components().any(|c| {
        c.as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .ends_with("tests")
    });
    (name != "lib" && !is_test).then_some(name)
}

/// The top-level modules `text` names through `crate::` paths, comments and the
/// `#[cfg(test)] mod tests` block left out.
fn named_modules(text: &str, known: &BTreeSet<String>) -> BTreeSet<String> {
    let code = text
        .split("#[cfg(test)]\nmod tests")
        .next()
        .unwrap_or_default();
    let mut named = BTreeSet::new();
    for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
        for (at, _) in line.match_indices("crate::") {
            let rest = &line[at + "crate::".len()..];
            let mut heads = Vec::new();
            if let Some(group) = rest.strip_prefix('{') {
                // `use crate::{a::X, b};`: each path in the group.
                let group = group.split('}').next().unwrap_or_default();
                heads.extend(group.split(',').map(str::trim));
            } else {
                heads.push(rest);
            }
            for head in heads {
                let name: String = head
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                if known.contains(&name) {
                    named.insert(name);
                }
            }
        }
    }
    named
}

#[test]
fn core_modules_form_a_dag() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let known: BTreeSet<String> = files.iter().filter_map(|f| top_module(&src, f)).collect();
    assert!(
        known.contains("context") && known.contains("turn"),
        "{known:?}"
    );
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let Some(module) = top_module(&src, file) else {
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap();
        let deps = edges.entry(module.clone()).or_default();
        deps.extend(
            named_modules(&text, &known)
                .into_iter()
                .filter(|d| *d != module),
        );
    }

    // Depth-first search; a module met again while still on the path closes a cycle.
    fn visit(
        module: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|m| m == module) {
            let mut cycle = path[at..].to_vec();
            cycle.push(module.to_string());
            return Some(cycle);
        }
        if !done.insert(module.to_string()) {
            return None;
        }
        path.push(module.to_string());
        for dep in edges.get(module).into_iter().flatten() {
            if let Some(cycle) = visit(dep, edges, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    for module in edges.keys() {
        let cycle = visit(module, &edges, &mut Vec::new(), &mut done);
        assert_eq!(cycle, None, "a cycle among core's modules");
    }
    // The leaf really is below what runs turns.
    assert!(edges["turn"].contains("context") && edges["tools"].contains("context"));
    for above in [
        "turn",
        "tools",
        "review",
        "submission_loop",
        "thread",
        "driver",
    ] {
        assert!(!edges["context"].contains(above), "context -> {above}");
    }
}
