//! The committed schema (`crates/app-server/schema/`) is what the protocol types generate.
//! After changing a protocol type, regenerate it:
//! `cargo run -p deputy-cli -- app-server generate-json-schema --out crates/app-server/schema`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::collections::BTreeMap;
use std::path::Path;

use deputy_app_server::schema::schema_files;

#[test]
fn the_committed_schema_matches_the_protocol_types() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema");
    let committed: BTreeMap<String, String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&path).unwrap())
        })
        .collect();
    let generated = schema_files();
    let stale: Vec<&String> = generated
        .iter()
        .filter(|(name, content)| committed.get(*name) != Some(content))
        .map(|(name, _)| name)
        .chain(
            committed
                .keys()
                .filter(|name| !generated.contains_key(*name)),
        )
        .collect();
    assert!(
        stale.is_empty(),
        "the schema under {} has drifted from the protocol types ({stale:?}); regenerate it with \
         `cargo run -p deputy-cli -- app-server generate-json-schema --out crates/app-server/schema`",
        dir.display()
    );
}

#[path = "schema_drift/compat.rs"]
mod compat;

/// Fields deputy sends that Codex 0.125's schema does not have, each on purpose.
const DEPUTY_ONLY: &[(&str, &str)] = &[(
    "warning params.turnId",
    "the turn a warning arose in; generated clients ignore fields they do not know",
)];

/// Codex 0.125's schema for the methods deputy implements
/// (`tests/fixtures/codex-app-server-schema.json`, written by
/// `scripts/codex-app-server-schema.py` from `codex app-server generate-json-schema`).
#[test]
fn every_message_fits_the_schema_codex_clients_are_generated_from() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex-app-server-schema.json");
    let codex: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&fixture).unwrap()).unwrap();
    let ours: serde_json::Value =
        serde_json::from_str(&schema_files()[deputy_app_server::schema::BUNDLE_FILE]).unwrap();
    let (codex_doc, our_doc) = (compat::Doc::new(&codex), compat::Doc::new(&ours));
    let mut problems = Vec::new();
    for (section, parts) in [
        (
            "clientRequests",
            [
                ("params", compat::Direction::In),
                ("result", compat::Direction::Out),
            ],
        ),
        (
            "serverNotifications",
            [
                ("params", compat::Direction::Out),
                ("result", compat::Direction::Out),
            ],
        ),
        (
            "serverRequests",
            [
                ("params", compat::Direction::Out),
                ("result", compat::Direction::In),
            ],
        ),
    ] {
        for (method, entry) in ours[section].as_object().unwrap() {
            let Some(theirs) = codex[section].get(method) else {
                problems.push(format!("{method}: not a Codex 0.125 {section} method"));
                continue;
            };
            for (part, direction) in parts {
                if let (Some(t), Some(o)) = (theirs.get(part), entry.get(part)) {
                    let path = format!("{method} {part}");
                    compat::compare(&codex_doc, t, &our_doc, o, direction, &path, &mut problems);
                }
            }
        }
    }
    problems.retain(|p| {
        !DEPUTY_ONLY
            .iter()
            .any(|(path, _)| p.starts_with(&format!("{path}: deputy-only")))
    });
    problems.sort();
    problems.dedup();
    assert!(
        problems.is_empty(),
        "deputy's messages differ from Codex 0.125's schema ({}):\n{}",
        fixture.display(),
        problems.join("\n")
    );
}
