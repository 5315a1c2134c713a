//! `deputy app-server generate-json-schema --out DIR` writes exactly the committed schema.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;

use pretty_assertions::assert_eq;

use crate::harness::DEPUTY;

fn files(dir: &Path) -> BTreeMap<String, String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&path).unwrap())
        })
        .collect()
}

#[test]
fn generate_json_schema_writes_the_committed_schema() {
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("schema");
    let status = std::process::Command::new(DEPUTY)
        .args(["app-server", "generate-json-schema", "--out"])
        .arg(&target)
        .stdin(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());

    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../app-server/schema");
    let written = files(&target);
    assert!(written.contains_key("app_server_protocol.schemas.json"));
    assert!(written.contains_key("ThreadStartParams.json"));
    assert_eq!(written, files(&committed));
}
