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
