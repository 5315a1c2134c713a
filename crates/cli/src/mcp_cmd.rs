//! `deputy mcp list|get|add|remove`: the `[mcp_servers]` of `$DEPUTY_HOME/config.toml`.
//!
//! Reading checks each entry as a thread would (a malformed one is an error naming it);
//! writing edits the file in place with `toml_edit`, so its comments, order and layout
//! stay as the user left them, and replaces it whole (written aside, then renamed) so a
//! failed write loses nothing. `env` values are shown masked: they often hold tokens.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Subcommand;
use deputy_core::config::{McpServerConfig, McpServerTransport, check_mcp_server_name};
use serde::Deserialize as _;
use serde_json::{Value, json};
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table};

/// What `env` values are shown as.
const MASKED: &str = "*****";

/// `deputy mcp …`.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// List the configured MCP servers.
    List {
        /// Print them as a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Show one configured MCP server.
    Get {
        /// The server's name in `[mcp_servers]`.
        name: String,
        /// Print it as a JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Add an MCP server: `add NAME [--env K=V]… -- COMMAND ARGS…` starts a program and
    /// speaks to it on its stdio; `add NAME --url URL` reaches a Streamable HTTP endpoint.
    Add {
        /// The server's name (letters, digits, `_` and `-`).
        name: String,
        /// A variable set for the program (repeatable).
        #[arg(long, value_name = "KEY=VALUE", value_parser = parse_env, conflicts_with = "url")]
        env: Vec<(String, String)>,
        /// The Streamable HTTP endpoint.
        #[arg(long, conflicts_with = "command")]
        url: Option<String>,
        /// The variable holding the bearer token sent to `--url`.
        #[arg(long, value_name = "VAR", requires = "url")]
        bearer_token_env_var: Option<String>,
        /// The program and its arguments, after `--`.
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Remove an MCP server.
    Remove {
        /// The server's name in `[mcp_servers]`.
        name: String,
    },
}

/// Runs `command` against the config of `home`.
pub fn run(home: &Path, command: McpCommand) -> anyhow::Result<i32> {
    let path = home.join("config.toml");
    let mut out = std::io::stdout().lock();
    match command {
        McpCommand::List { json } => {
            let servers = read_servers(&path)?;
            if json {
                let all: Vec<Value> = servers.iter().map(|(n, s)| server_json(n, s)).collect();
                writeln!(out, "{}", serde_json::to_string_pretty(&all)?)?;
            } else if servers.is_empty() {
                writeln!(
                    out,
                    "No MCP servers are configured. Add one with `deputy mcp add`."
                )?;
            } else {
                for (name, server) in &servers {
                    let state = if server.enabled {
                        "enabled"
                    } else {
                        "disabled"
                    };
                    writeln!(out, "{name}\t{}\t{state}", target(server))?;
                }
            }
        }
        McpCommand::Get { name, json } => {
            let servers = read_servers(&path)?;
            let Some(server) = servers.get(&name) else {
                bail!("no MCP server `{name}` in {}", path.display());
            };
            if json {
                let shown = server_json(&name, server);
                writeln!(out, "{}", serde_json::to_string_pretty(&shown)?)?;
            } else {
                write_details(&mut out, &name, server)?;
            }
        }
        McpCommand::Add {
            name,
            env,
            url,
            bearer_token_env_var,
            command,
        } => {
            check_mcp_server_name(&name)?;
            let entry = new_entry(env, url, bearer_token_env_var, command)?;
            edit(&path, |doc| {
                let servers = servers_table(doc)?;
                if servers.contains_key(&name) {
                    bail!("an MCP server `{name}` is already configured; remove it first");
                }
                servers.insert(&name, Item::Table(entry));
                Ok(())
            })?;
            writeln!(out, "Added MCP server `{name}` to {}.", path.display())?;
        }
        McpCommand::Remove { name } => {
            edit(&path, |doc| {
                let removed = doc
                    .get_mut("mcp_servers")
                    .and_then(Item::as_table_like_mut)
                    .and_then(|servers| servers.remove(&name));
                if removed.is_none() {
                    bail!("no MCP server `{name}` is configured");
                }
                Ok(())
            })?;
            writeln!(out, "Removed MCP server `{name}` from {}.", path.display())?;
        }
    }
    Ok(0)
}

/// `KEY=VALUE` of `--env`.
fn parse_env(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_string(), value.to_string())),
        _ => Err(format!("`{text}` is not KEY=VALUE")),
    }
}

/// The servers of the file at `path` (none when it does not exist), each checked.
fn read_servers(path: &Path) -> anyhow::Result<BTreeMap<String, McpServerConfig>> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(err) => return Err(err).with_context(|| format!("reading {}", path.display())),
    };
    let table: toml::Table =
        toml::from_str(&text).with_context(|| format!("reading {}", path.display()))?;
    let Some(servers) = table.get("mcp_servers") else {
        return Ok(BTreeMap::new());
    };
    let Some(servers) = servers.as_table() else {
        bail!("`mcp_servers` in {} must be a table", path.display());
    };
    servers
        .iter()
        .map(|(name, entry)| {
            check_mcp_server_name(name)?;
            let server = McpServerConfig::deserialize(entry.clone())
                .map_err(|err| anyhow::anyhow!("`mcp_servers.{name}`: {}", err.message()))?;
            Ok((name.clone(), server))
        })
        .collect()
}

/// The command line or URL of `server`, in one line.
fn target(server: &McpServerConfig) -> String {
    match &server.transport {
        McpServerTransport::Stdio { command, args, .. } => std::iter::once(command)
            .chain(args)
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(" "),
        McpServerTransport::StreamableHttp { url, .. } => url.clone(),
    }
}

/// `server` as `list --json` and `get --json` print it.
fn server_json(name: &str, server: &McpServerConfig) -> Value {
    let transport = match &server.transport {
        McpServerTransport::Stdio {
            command,
            args,
            env,
            env_vars,
            cwd,
        } => json!({
            "type": "stdio",
            "command": command,
            "args": args,
            "env": env.keys().map(|k| (k.clone(), json!(MASKED))).collect::<serde_json::Map<_, _>>(),
            "env_vars": env_vars,
            "cwd": cwd,
        }),
        McpServerTransport::StreamableHttp {
            url,
            bearer_token_env_var,
            http_headers,
            env_http_headers,
        } => json!({
            "type": "streamable_http",
            "url": url,
            "bearer_token_env_var": bearer_token_env_var,
            "http_headers": http_headers,
            "env_http_headers": env_http_headers,
        }),
    };
    json!({
        "name": name,
        "enabled": server.enabled,
        "required": server.required,
        "transport": transport,
        "startup_timeout_sec": server.startup_timeout.as_secs_f64(),
        "tool_timeout_sec": server.tool_timeout.as_secs_f64(),
        "enabled_tools": server.enabled_tools,
        "disabled_tools": server.disabled_tools,
    })
}

/// `get NAME` for a person.
fn write_details(out: &mut impl Write, name: &str, server: &McpServerConfig) -> anyhow::Result<()> {
    writeln!(out, "{name}")?;
    writeln!(out, "  enabled: {}", server.enabled)?;
    writeln!(out, "  required: {}", server.required)?;
    match &server.transport {
        McpServerTransport::Stdio {
            command,
            args,
            env,
            env_vars,
            cwd,
        } => {
            writeln!(out, "  transport: stdio")?;
            writeln!(out, "  command: {command}")?;
            writeln!(out, "  args: {}", args.join(" "))?;
            let env: Vec<String> = env.keys().map(|k| format!("{k}={MASKED}")).collect();
            writeln!(out, "  env: {}", env.join(" "))?;
            writeln!(out, "  env_vars: {}", env_vars.join(" "))?;
            if let Some(cwd) = cwd {
                writeln!(out, "  cwd: {}", cwd.display())?;
            }
        }
        McpServerTransport::StreamableHttp {
            url,
            bearer_token_env_var,
            ..
        } => {
            writeln!(out, "  transport: streamable_http")?;
            writeln!(out, "  url: {url}")?;
            if let Some(var) = bearer_token_env_var {
                writeln!(out, "  bearer_token_env_var: {var}")?;
            }
        }
    }
    writeln!(
        out,
        "  startup_timeout_sec: {}",
        server.startup_timeout.as_secs_f64()
    )?;
    writeln!(
        out,
        "  tool_timeout_sec: {}",
        server.tool_timeout.as_secs_f64()
    )?;
    Ok(())
}

/// The table `add` writes, checked as a thread would read it.
fn new_entry(
    env: Vec<(String, String)>,
    url: Option<String>,
    bearer_token_env_var: Option<String>,
    command: Vec<String>,
) -> anyhow::Result<Table> {
    let mut entry = Table::new();
    match (url, command.split_first()) {
        (Some(url), None) => {
            entry.insert("url", toml_edit::value(url));
            if let Some(var) = bearer_token_env_var {
                entry.insert("bearer_token_env_var", toml_edit::value(var));
            }
        }
        (None, Some((program, args))) => {
            entry.insert("command", toml_edit::value(program.as_str()));
            if !args.is_empty() {
                entry.insert("args", toml_edit::value(args.iter().collect::<Array>()));
            }
            if !env.is_empty() {
                let env: InlineTable = env.into_iter().collect();
                entry.insert("env", toml_edit::value(env));
            }
        }
        (Some(_), Some(_)) => bail!("give either `--url URL` or `-- COMMAND ARGS…`, not both"),
        (None, None) => {
            bail!("give the server's program after `--` (`-- COMMAND ARGS…`) or `--url URL`")
        }
    }
    let text = entry.to_string();
    toml::from_str::<McpServerConfig>(&text).map_err(|err| anyhow::anyhow!("{}", err.message()))?;
    Ok(entry)
}

/// `[mcp_servers]` of `doc`, created (as a parent of its entries only) when missing.
fn servers_table(doc: &mut DocumentMut) -> anyhow::Result<&mut Table> {
    let item = doc.entry("mcp_servers").or_insert_with(|| {
        let mut table = Table::new();
        table.set_implicit(true);
        Item::Table(table)
    });
    item.as_table_mut()
        .context("`mcp_servers` in config.toml must be a table")
}

/// Applies `change` to the config file at `path` (created if missing), keeping everything
/// else of it as it was.
fn edit(
    path: &Path,
    change: impl FnOnce(&mut DocumentMut) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(err) => return Err(err).with_context(|| format!("reading {}", path.display())),
    };
    let mut doc: DocumentMut = text
        .parse()
        .with_context(|| format!("reading {}", path.display()))?;
    change(&mut doc)?;
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    replace_durably(path, doc.to_string().as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}

/// Replaces `path` with `contents` so that a crash at any instant leaves the old file or
/// the new one: written aside with the old file's permissions, synced, renamed over it,
/// and the rename synced with the directory. A failed attempt leaves nothing aside.
fn replace_durably(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let aside = aside_path(path);
    let written = (|| {
        let mut file = fs::File::create(&aside)?;
        std::io::Write::write_all(&mut file, contents)?;
        if let Ok(meta) = fs::metadata(path) {
            file.set_permissions(meta.permissions())?;
        }
        file.sync_all()?;
        fs::rename(&aside, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&aside);
    }
    written?;
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::File::open(dir)?.sync_all()
}

/// Where a new version of `path` is written before it replaces the old one.
fn aside_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}.new", std::process::id()));
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn a_replaced_file_keeps_its_permissions_and_leaves_nothing_aside() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        fs::write(&path, "old = 1\n").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        replace_durably(&path, b"new = 2\n").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new = 2\n");
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["config.toml"]);
    }

    #[test]
    fn a_replacement_that_cannot_land_leaves_the_old_file_and_nothing_aside() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        // A directory where the file should be: the rename fails after the write.
        fs::create_dir(&path).unwrap();
        fs::write(path.join("inside"), "kept").unwrap();
        assert!(replace_durably(&path, b"new = 2\n").is_err());
        assert_eq!(fs::read_to_string(path.join("inside")).unwrap(), "kept");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["config.toml"]);
    }
}
