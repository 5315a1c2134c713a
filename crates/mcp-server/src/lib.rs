//! deputy's MCP front door (placeholder until the MCP issue lands).

use std::path::PathBuf;

use deputy_core::config::ConfigLayers;

/// Serves MCP on stdio until stdin closes.
pub async fn run_stdio_server(
    _layers: ConfigLayers,
    _launcher: Option<PathBuf>,
) -> anyhow::Result<i32> {
    anyhow::bail!("the MCP server is not built yet")
}
