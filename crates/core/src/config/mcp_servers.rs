//! `[mcp_servers.NAME]`: the MCP servers whose tools the model is offered, in Codex's
//! spelling. A server is either a program deputy starts and speaks to on its stdio
//! (`command`) or a Streamable HTTP endpoint (`url`); a key of the other kind, or neither
//! kind, is an error naming the key.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

/// How long a server may take to start (and answer `initialize` and `tools/list`).
pub const DEFAULT_MCP_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one tool call may take.
pub const DEFAULT_MCP_TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// One configured MCP server. Two threads whose servers have the same name and the same
/// definition share one running server.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(try_from = "RawMcpServer")]
pub struct McpServerConfig {
    /// How deputy reaches it.
    pub transport: McpServerTransport,
    /// `enabled` (default true): a disabled server is not started.
    pub enabled: bool,
    /// `required`: a thread does not start when this server cannot.
    pub required: bool,
    /// `startup_timeout_sec` (default 10).
    pub startup_timeout: Duration,
    /// `tool_timeout_sec` (default 60).
    pub tool_timeout: Duration,
    /// `enabled_tools`: only these tools are offered, when given.
    pub enabled_tools: Option<Vec<String>>,
    /// `disabled_tools`: these tools are never offered.
    pub disabled_tools: Vec<String>,
}

/// How deputy reaches an MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum McpServerTransport {
    /// A program started by deputy, spoken to over its stdin and stdout.
    Stdio {
        /// `command`: the program.
        command: String,
        /// `args`.
        args: Vec<String>,
        /// `env`: variables set for it.
        env: BTreeMap<String, String>,
        /// `env_vars`: variables passed through from deputy's own environment.
        env_vars: Vec<String>,
        /// `cwd`: where it starts (default: deputy's own working directory).
        cwd: Option<PathBuf>,
    },
    /// A Streamable HTTP endpoint.
    StreamableHttp {
        /// `url`.
        url: String,
        /// `bearer_token_env_var`: the variable holding the `Authorization: Bearer` token.
        bearer_token_env_var: Option<String>,
        /// `http_headers`: headers sent with every request.
        http_headers: BTreeMap<String, String>,
        /// `env_http_headers`: header name → the variable holding its value.
        env_http_headers: BTreeMap<String, String>,
    },
}

impl McpServerConfig {
    /// Whether the server offers `tool` (after `enabled_tools` and `disabled_tools`).
    pub fn offers_tool(&self, tool: &str) -> bool {
        self.enabled_tools
            .as_ref()
            .is_none_or(|enabled| enabled.iter().any(|t| t == tool))
            && !self.disabled_tools.iter().any(|t| t == tool)
    }
}

/// The table as written; [`McpServerConfig`] is what it means.
#[derive(Debug, Default, Deserialize)]
pub(super) struct RawMcpServer {
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<BTreeMap<String, String>>,
    env_vars: Option<Vec<String>>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    bearer_token_env_var: Option<String>,
    /// Codex refuses a token written in the file; so does deputy, saying what to do.
    bearer_token: Option<toml::Value>,
    http_headers: Option<BTreeMap<String, String>>,
    env_http_headers: Option<BTreeMap<String, String>>,
    enabled: Option<bool>,
    required: Option<bool>,
    startup_timeout_sec: Option<f64>,
    /// Codex's older spelling of the startup timeout.
    startup_timeout_ms: Option<u64>,
    tool_timeout_sec: Option<f64>,
    enabled_tools: Option<Vec<String>>,
    disabled_tools: Option<Vec<String>>,
}

impl TryFrom<RawMcpServer> for McpServerConfig {
    type Error = String;

    fn try_from(raw: RawMcpServer) -> Result<Self, String> {
        if raw.bearer_token.is_some() {
            return Err(
                "`bearer_token` is not read from the file: put the token in an \
                        environment variable and name it in `bearer_token_env_var`"
                    .into(),
            );
        }
        let stdio_keys = [
            ("args", raw.args.is_some()),
            ("env", raw.env.is_some()),
            ("env_vars", raw.env_vars.is_some()),
            ("cwd", raw.cwd.is_some()),
        ];
        let http_keys = [
            ("bearer_token_env_var", raw.bearer_token_env_var.is_some()),
            ("http_headers", raw.http_headers.is_some()),
            ("env_http_headers", raw.env_http_headers.is_some()),
        ];
        let transport = match (raw.command, raw.url) {
            (Some(_), Some(_)) => {
                return Err(
                    "`command` and `url` are both set: a server is either a program \
                            (`command`) or a Streamable HTTP endpoint (`url`)"
                        .into(),
                );
            }
            (None, None) => {
                return Err(
                    "neither `command` (a program on stdio) nor `url` (a Streamable \
                            HTTP endpoint) is set"
                        .into(),
                );
            }
            (Some(command), None) => {
                if let Some((key, _)) = http_keys.iter().find(|(_, set)| *set) {
                    return Err(format!(
                        "`{key}` is for Streamable HTTP servers (`url`), not for a `command`"
                    ));
                }
                if command.trim().is_empty() {
                    return Err("`command` is empty".into());
                }
                McpServerTransport::Stdio {
                    command,
                    args: raw.args.unwrap_or_default(),
                    env: raw.env.unwrap_or_default(),
                    env_vars: raw.env_vars.unwrap_or_default(),
                    cwd: raw.cwd,
                }
            }
            (None, Some(url)) => {
                if let Some((key, _)) = stdio_keys.iter().find(|(_, set)| *set) {
                    return Err(format!(
                        "`{key}` is for servers started by deputy (`command`), not for a `url`"
                    ));
                }
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(format!(
                        "`url` must be an http:// or https:// URL, not `{url}`"
                    ));
                }
                McpServerTransport::StreamableHttp {
                    url,
                    bearer_token_env_var: raw.bearer_token_env_var,
                    http_headers: raw.http_headers.unwrap_or_default(),
                    env_http_headers: raw.env_http_headers.unwrap_or_default(),
                }
            }
        };
        let startup_timeout = match (raw.startup_timeout_sec, raw.startup_timeout_ms) {
            (Some(secs), _) => seconds("startup_timeout_sec", secs)?,
            (None, Some(ms)) => Duration::from_millis(ms),
            (None, None) => DEFAULT_MCP_STARTUP_TIMEOUT,
        };
        let tool_timeout = match raw.tool_timeout_sec {
            Some(secs) => seconds("tool_timeout_sec", secs)?,
            None => DEFAULT_MCP_TOOL_TIMEOUT,
        };
        Ok(Self {
            transport,
            enabled: raw.enabled.unwrap_or(true),
            required: raw.required.unwrap_or(false),
            startup_timeout,
            tool_timeout,
            enabled_tools: raw.enabled_tools,
            disabled_tools: raw.disabled_tools.unwrap_or_default(),
        })
    }
}

/// A timeout given in (possibly fractional) seconds.
fn seconds(key: &str, secs: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("`{key}` must be a positive number of seconds, not {secs}"))
}

/// A name that cannot name an MCP server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid MCP server name `mcp_servers.{0}`: use letters, digits, `_` and `-` only")]
pub struct InvalidServerName(pub String);

/// Whether `name` can name a server: the tool names the model sees are built from it.
pub fn check_server_name(name: &str) -> Result<(), InvalidServerName> {
    if !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        Ok(())
    } else {
        Err(InvalidServerName(name.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use pretty_assertions::assert_eq;

    use super::*;
    use crate::config::{ConfigLayers, parse_cli_override};

    fn load(text: &str) -> Result<crate::config::Config, String> {
        let home = tempfile::tempdir().unwrap();
        fs::write(home.path().join("config.toml"), text).unwrap();
        ConfigLayers::new(home.path().to_path_buf())
            .load()
            .map_err(|e| e.to_string())
    }

    #[test]
    fn every_codex_key_is_read() {
        let config = load(
            r#"
[mcp_servers.docs]
command = "docs-server"
args = ["--stdio"]
env = { TOKEN_FILE = "/t" }
env_vars = ["HOME_API"]
cwd = "/srv"
enabled_tools = ["search"]
disabled_tools = ["delete"]
startup_timeout_sec = 2.5
tool_timeout_sec = 30
required = true

[mcp_servers.web]
url = "https://mcp.example.com/mcp"
bearer_token_env_var = "WEB_TOKEN"
http_headers = { "X-Team" = "a" }
env_http_headers = { "X-Key" = "WEB_KEY" }
enabled = false
"#,
        )
        .unwrap();
        assert!(config.warnings.is_empty(), "{:?}", config.warnings);
        let docs = &config.mcp_servers["docs"];
        assert_eq!(
            docs.transport,
            McpServerTransport::Stdio {
                command: "docs-server".into(),
                args: vec!["--stdio".into()],
                env: BTreeMap::from([("TOKEN_FILE".into(), "/t".into())]),
                env_vars: vec!["HOME_API".into()],
                cwd: Some("/srv".into()),
            }
        );
        assert_eq!(docs.startup_timeout, Duration::from_millis(2500));
        assert_eq!(docs.tool_timeout, Duration::from_secs(30));
        assert!(docs.required && docs.enabled);
        assert!(docs.offers_tool("search"));
        assert!(!docs.offers_tool("delete") && !docs.offers_tool("other"));
        let web = &config.mcp_servers["web"];
        assert!(!web.enabled && !web.required);
        assert_eq!(web.startup_timeout, DEFAULT_MCP_STARTUP_TIMEOUT);
        assert_eq!(web.tool_timeout, DEFAULT_MCP_TOOL_TIMEOUT);
        assert_eq!(
            web.transport,
            McpServerTransport::StreamableHttp {
                url: "https://mcp.example.com/mcp".into(),
                bearer_token_env_var: Some("WEB_TOKEN".into()),
                http_headers: BTreeMap::from([("X-Team".into(), "a".into())]),
                env_http_headers: BTreeMap::from([("X-Key".into(), "WEB_KEY".into())]),
            }
        );
    }

    #[test]
    fn a_malformed_entry_is_an_error_naming_the_key_and_line() {
        for (text, line, wanted) in [
            ("[mcp_servers.a]\nargs = [\"x\"]\n", 1, "neither `command`"),
            (
                "[mcp_servers.a]\ncommand = \"x\"\nurl = \"http://h\"\n",
                1,
                "`command` and `url` are both set",
            ),
            (
                "[mcp_servers.a]\ncommand = \"x\"\nbearer_token_env_var = \"T\"\n",
                1,
                "`bearer_token_env_var` is for Streamable HTTP",
            ),
            (
                "[mcp_servers.a]\nurl = \"http://h\"\nenv_vars = [\"T\"]\n",
                1,
                "`env_vars` is for servers started by deputy",
            ),
            (
                "[mcp_servers.a]\nurl = \"ftp://h\"\n",
                1,
                "http:// or https://",
            ),
            (
                "[mcp_servers.a]\ncommand = \"x\"\nstartup_timeout_sec = -1\n",
                1,
                "`startup_timeout_sec` must be a positive number",
            ),
            (
                "[mcp_servers.a]\ncommand = \"x\"\nbearer_token = \"secret\"\n",
                1,
                "bearer_token_env_var",
            ),
            (
                "x = 1\n[mcp_servers.a]\ncommand = \"x\"\nargs = \"--stdio\"\n",
                4,
                "`mcp_servers.a.args`: expected an array",
            ),
        ] {
            let err = load(text).unwrap_err();
            assert!(err.contains(&format!(":{line}: ")), "{text}: {err}");
            assert!(err.contains("`mcp_servers.a"), "{text}: {err}");
            assert!(err.contains(wanted), "{text}: {err}");
        }
    }

    #[test]
    fn a_bad_server_name_and_an_unknown_key_are_told() {
        let err = load("[mcp_servers.\"my docs\"]\ncommand = \"x\"\n").unwrap_err();
        assert!(err.contains("`mcp_servers.my docs`"), "{err}");
        let config =
            load("[mcp_servers.a]\ncommand = \"x\"\ncomand = \"y\"\nscopes = []\n").unwrap();
        assert!(
            config
                .warnings
                .iter()
                .any(|w| w.contains("`mcp_servers.a.comand`")
                    && w.contains("did you mean `command`?")),
            "{:?}",
            config.warnings
        );
        assert!(
            config
                .warnings
                .iter()
                .any(|w| w.contains("`mcp_servers.a.scopes` is a Codex setting")),
            "{:?}",
            config.warnings
        );
    }

    #[test]
    fn servers_are_set_and_switched_off_by_overrides() {
        let home = tempfile::tempdir().unwrap();
        fs::write(
            home.path().join("config.toml"),
            "[mcp_servers.a]\ncommand = \"x\"\n",
        )
        .unwrap();
        let mut layers = ConfigLayers::new(home.path().to_path_buf());
        layers.cli_overrides = vec![
            parse_cli_override("mcp_servers.a.enabled=false").unwrap(),
            parse_cli_override("mcp_servers.b.url=\"http://127.0.0.1:9/mcp\"").unwrap(),
        ];
        layers.call_overrides = vec![(
            "mcp_servers.b.tool_timeout_sec".into(),
            toml::Value::Integer(5),
        )];
        let config = layers.load().unwrap();
        assert!(!config.mcp_servers["a"].enabled);
        assert_eq!(config.mcp_servers["b"].tool_timeout, Duration::from_secs(5));
        layers.call_overrides = vec![(
            "mcp_servers.b.tool_timeout_sec".into(),
            toml::Value::String("soon".into()),
        )];
        let err = layers.load().unwrap_err().to_string();
        assert!(err.contains("`mcp_servers.b.tool_timeout_sec`"), "{err}");
    }
}
