//! The MCP servers a client hands to `session/new` and `session/load` (an editor's own
//! context servers), added to the session's configuration as `mcp_servers` entries, so
//! the engine starts, shares and stops them like the ones in config.toml. A client
//! server of the same name replaces the configured one for that session.

use agent_client_protocol::v1::schema::McpServer;
use toml::{Table, Value};

/// What the client's servers become: configuration overrides, and the servers that
/// cannot be used, each with why.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct ClientServers {
    /// `("mcp_servers.NAME", table)` pairs for the session's configuration layers.
    pub overrides: Vec<(String, Value)>,
    /// `name: reason` for each server left out.
    pub refused: Vec<String>,
}

/// Translates the client's server list. Names become valid server names (characters
/// other than letters, digits, `_` and `-` turn into `_`); a second server with the same
/// resulting name is left out rather than silently replacing the first.
pub(crate) fn client_servers(servers: &[McpServer]) -> ClientServers {
    let mut out = ClientServers::default();
    for server in servers {
        let (name, entry) = match server {
            McpServer::Stdio(stdio) => {
                let mut entry = Table::new();
                entry.insert(
                    "command".into(),
                    stdio.command.to_string_lossy().into_owned().into(),
                );
                entry.insert("args".into(), strings(&stdio.args));
                let env: Table = stdio
                    .env
                    .iter()
                    .map(|var| (var.name.clone(), Value::from(var.value.clone())))
                    .collect();
                entry.insert("env".into(), Value::Table(env));
                (&stdio.name, entry)
            }
            McpServer::Http(http) => {
                let mut entry = Table::new();
                entry.insert("url".into(), http.url.clone().into());
                let headers: Table = http
                    .headers
                    .iter()
                    .map(|h| (h.name.clone(), Value::from(h.value.clone())))
                    .collect();
                entry.insert("http_headers".into(), Value::Table(headers));
                (&http.name, entry)
            }
            McpServer::Sse(sse) => {
                out.refused.push(format!(
                    "{}: the SSE transport is not supported (deputy speaks Streamable HTTP)",
                    sse.name
                ));
                continue;
            }
            _ => {
                out.refused
                    .push("(unnamed): a transport this version of deputy does not know".into());
                continue;
            }
        };
        let key = format!("mcp_servers.{}", server_name(name));
        if out.overrides.iter().any(|(taken, _)| *taken == key) {
            out.refused.push(format!(
                "{name}: another of the session's servers has the same name"
            ));
            continue;
        }
        out.overrides.push((key, Value::Table(entry)));
    }
    out
}

/// `name` as a server name the tool names can be built from.
fn server_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.is_empty() {
        "client".into()
    } else {
        cleaned
    }
}

fn strings(items: &[String]) -> Value {
    Value::Array(items.iter().cloned().map(Value::from).collect())
}

#[cfg(test)]
mod tests {
    use agent_client_protocol::v1::schema::{
        EnvVariable, HttpHeader, McpServerHttp, McpServerSse, McpServerStdio,
    };
    use deputy_core::config::{ConfigLayers, McpServerTransport};
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn stdio_and_http_servers_become_config_entries_the_engine_reads() {
        let servers = [
            McpServer::Stdio(
                McpServerStdio::new("My Files", "/usr/bin/files-mcp")
                    .args(vec!["--root".into(), "/w".into()])
                    .env(vec![EnvVariable::new("TOKEN", "s3cret")]),
            ),
            McpServer::Http(
                McpServerHttp::new("docs", "http://127.0.0.1:9/mcp")
                    .headers(vec![HttpHeader::new("X-Team", "blue")]),
            ),
        ];
        let translated = client_servers(&servers);
        assert_eq!(translated.refused, Vec::<String>::new());

        let home = tempfile::tempdir().unwrap();
        let mut layers = ConfigLayers::new(home.path().to_path_buf());
        layers.call_overrides = translated.overrides;
        let config = layers.load().unwrap();
        let files = &config.mcp_servers["My_Files"];
        match &files.transport {
            McpServerTransport::Stdio {
                command, args, env, ..
            } => {
                assert_eq!(command, "/usr/bin/files-mcp");
                assert_eq!(args, &["--root", "/w"]);
                assert_eq!(env["TOKEN"], "s3cret");
            }
            other => panic!("not stdio: {other:?}"),
        }
        match &config.mcp_servers["docs"].transport {
            McpServerTransport::StreamableHttp {
                url, http_headers, ..
            } => {
                assert_eq!(url, "http://127.0.0.1:9/mcp");
                assert_eq!(http_headers["X-Team"], "blue");
            }
            other => panic!("not HTTP: {other:?}"),
        }
        assert!(!files.required, "a client's server never stops a session");
    }

    #[test]
    fn sse_servers_and_name_clashes_are_refused_with_a_reason() {
        let servers = [
            McpServer::Sse(McpServerSse::new("old", "http://127.0.0.1:9/sse")),
            McpServer::Stdio(McpServerStdio::new("a b", "/bin/a")),
            McpServer::Stdio(McpServerStdio::new("a.b", "/bin/b")),
        ];
        let translated = client_servers(&servers);
        assert_eq!(translated.overrides.len(), 1);
        assert_eq!(translated.overrides[0].0, "mcp_servers.a_b");
        assert_eq!(translated.refused.len(), 2, "{:?}", translated.refused);
        assert!(translated.refused[0].starts_with("old: the SSE transport"));
        assert!(translated.refused[1].starts_with("a.b: another"));
    }
}
