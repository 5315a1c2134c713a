"""Drives `deputy mcp-server` with the official MCP Python SDK and answers, as the user,
the form an MCP server deputy uses (server-everything) asks for during a tool call.

Usage: mcp_elicitation_client.py <deputy binary>
Environment: DEPUTY_HOME and HOME (passed on to the server explicitly, because the SDK
gives the server a filtered environment).
Prints one JSON object on stdout: the forms it was asked and the `codex` call's result.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

# Bound for the turn; a hang becomes a failure.
WAIT_SECONDS = 40


async def main(deputy: str) -> dict:
    params = StdioServerParameters(
        command=deputy,
        args=["mcp-server"],
        env={
            "DEPUTY_HOME": os.environ["DEPUTY_HOME"],
            "HOME": os.environ["HOME"],
            "PATH": os.environ["PATH"],
            "RUST_LOG": "warn",
        },
        cwd=os.getcwd(),
    )
    asked = []

    async def answer(context, params: types.ElicitRequestParams):
        asked.append(
            {
                "message": params.message,
                "fields": sorted((params.requested_schema or {}).get("properties", {})),
            }
        )
        return types.ElicitResult(
            action="accept", content={"name": "Ada Lovelace", "check": True}
        )

    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=answer) as session:
            await session.initialize()
            result = await session.call_tool(
                "codex",
                {"prompt": "ask me for my name"},
                read_timeout_seconds=WAIT_SECONDS,
            )
    return {
        "asked": asked,
        "isError": bool(result.is_error),
        "structuredContent": result.structured_content,
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1]))))
