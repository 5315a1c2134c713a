//! The protocol's JSON Schema, generated from its types (never written by hand):
//! one file per params and result type, and one bundle naming every method with its
//! params and result. `deputy app-server generate-json-schema --out DIR` writes them;
//! the copy committed under `crates/app-server/schema/` is checked against them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schemars::SchemaGenerator;
use serde_json::{Map, Value, json};

use crate::protocol::{
    ClientNotification, MethodSchema, client_request_roots, describe_client_requests,
    describe_server_notifications, describe_server_requests, server_notification_roots,
    server_request_roots,
};

/// The bundle's file name.
pub const BUNDLE_FILE: &str = "app_server_protocol.schemas.json";

/// Why the schema could not be written.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// Creating the directory or writing a file failed.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Every schema file: name → content (pretty JSON with a final newline), by name.
pub fn schema_files() -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    let roots = client_request_roots()
        .into_iter()
        .chain(server_notification_roots())
        .chain(server_request_roots());
    for (name, schema) in roots {
        files.insert(format!("{name}.json"), pretty(&Value::from(schema)));
    }
    files.insert(BUNDLE_FILE.to_string(), pretty(&bundle()));
    files
}

/// Writes [`schema_files`] into `out_dir` (created if missing); returns the paths written.
#[allow(
    clippy::disallowed_methods,
    reason = "blocking by design: `deputy app-server generate-json-schema` calls it with no runtime"
)]
pub fn write_json_schema(out_dir: &Path) -> Result<Vec<PathBuf>, SchemaError> {
    let failed = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SchemaError::Write { path, source }
    };
    std::fs::create_dir_all(out_dir).map_err(failed(out_dir))?;
    let mut written = Vec::new();
    for (name, content) in schema_files() {
        let path = out_dir.join(name);
        std::fs::write(&path, content).map_err(failed(&path))?;
        written.push(path);
    }
    Ok(written)
}

/// One document naming every method with its params and result, types in `$defs`.
fn bundle() -> Value {
    let mut generator = SchemaGenerator::default();
    let client_requests = methods(describe_client_requests(&mut generator));
    let server_notifications = methods(describe_server_notifications(&mut generator));
    let server_requests = methods(describe_server_requests(&mut generator));
    let client_notifications: Map<String, Value> = ClientNotification::METHODS
        .iter()
        .map(|method| (method.to_string(), json!({})))
        .collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "DeputyAppServerProtocol",
        "description": "deputy app-server: Codex's app-server v2 JSON-RPC subset (JSONL on stdio, no \"jsonrpc\" field). Each method names the $defs entry of its params and result.",
        "clientRequests": client_requests,
        "clientNotifications": client_notifications,
        "serverNotifications": server_notifications,
        "serverRequests": server_requests,
        "$defs": generator.take_definitions(true),
    })
}

fn methods(described: Vec<MethodSchema>) -> Map<String, Value> {
    described
        .into_iter()
        .map(
            |MethodSchema {
                 method,
                 params,
                 result,
             }| {
                let mut entry = Map::new();
                entry.insert("params".into(), Value::from(params));
                if let Some(result) = result {
                    entry.insert("result".into(), Value::from(result));
                }
                (method.to_string(), Value::Object(entry))
            },
        )
        .collect()
}

fn pretty(value: &Value) -> String {
    // Keys sorted whether or not serde_json keeps insertion order (`preserve_order`, which
    // the ACP crates turn on for any build that includes them).
    let mut value = value.clone();
    value.sort_all_objects();
    // A `Value` always serializes.
    let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
    text.push('\n');
    text
}
