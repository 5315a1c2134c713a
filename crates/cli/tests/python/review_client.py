"""Calls deputy's `review` tool with the official MCP Python SDK, which checks a
successful result's `structuredContent` against the tool's `outputSchema`, and prints
what it saw: a review of the uncommitted changes, then one against a branch that does
not exist.

Usage: review_client.py <deputy binary>
Environment: DEPUTY_HOME and HOME, passed on to the server explicitly (the SDK gives
the server a filtered environment). The server runs in the current directory.
Prints one JSON object on stdout; exits non-zero on any failure, a result the SDK
finds invalid included.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

# Bound for each call; a hang becomes a failure.
WAIT_SECONDS = 20


def summary(result) -> dict:
    return {
        "isError": bool(result.is_error),
        "text": [block.text for block in result.content if block.type == "text"],
        "structuredContent": result.structured_content,
    }


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
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            reviewed = await session.call_tool(
                "review", {"target": "uncommitted"}, read_timeout_seconds=WAIT_SECONDS
            )
            failed = await session.call_tool(
                "review",
                {"target": {"base_branch": "no-such-branch"}},
                read_timeout_seconds=WAIT_SECONDS,
            )
    review = next(tool for tool in tools.tools if tool.name == "review")
    return {
        "hasOutputSchema": review.output_schema is not None,
        "reviewed": summary(reviewed),
        "failed": summary(failed),
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1]))))
