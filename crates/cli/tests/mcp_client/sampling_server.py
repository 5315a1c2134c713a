"""An MCP server built with the official MCP Python SDK whose tool asks its client to sample
the client's model (`sampling/createMessage`), for deputy's test that it declines.

Usage: sampling_server.py (stdio). Its one tool, `summarize {text}`, answers what the
client said: `sampled: ...` when it sampled, `sampling failed: ...` with the client's error.
"""

from mcp import types
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("sampler")


@server.tool()
async def summarize(text: str, ctx: Context) -> str:
    """Summarizes `text` with the client's model."""
    try:
        result = await ctx.session.create_message(
            messages=[
                types.SamplingMessage(
                    role="user",
                    content=types.TextContent(type="text", text=f"Summarize: {text}"),
                )
            ],
            max_tokens=50,
        )
    except Exception as err:  # the client's refusal, whatever the SDK wraps it in
        return f"sampling failed: {err}"
    return f"sampled: {result.content}"


if __name__ == "__main__":
    server.run()
