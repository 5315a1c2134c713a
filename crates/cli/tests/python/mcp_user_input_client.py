"""Runs one `codex` call on `deputy mcp-server` with the official MCP Python SDK, answering
the elicitations it receives through the SDK's elicitation callback, and prints what it saw.

Usage: mcp_user_input_client.py <deputy binary> <accept|decline>
With `accept`, each form field with an `enum` gets its last choice, any other field the
text `typed by python`. Environment: DEPUTY_HOME and HOME, passed on to the server.
Prints one JSON object on stdout; exits non-zero on any failure.
"""

import asyncio
import json
import os
import sys

import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

# Bound for waits the server should satisfy at once; a hang becomes a failure.
WAIT_SECONDS = 30


async def main(deputy: str, action: str) -> dict:
    params = StdioServerParameters(
        command=deputy,
        args=["mcp-server"],
        env={
            "DEPUTY_HOME": os.environ["DEPUTY_HOME"],
            "HOME": os.environ["HOME"],
            "RUST_LOG": "warn",
        },
        cwd=os.getcwd(),
    )
    seen = []

    async def on_elicitation(context, request: types.ElicitRequestParams):
        schema = request.requested_schema
        if hasattr(schema, "model_dump"):
            schema = schema.model_dump(by_alias=True, exclude_none=True)
        seen.append({"message": request.message, "schema": schema})
        if action != "accept":
            return types.ElicitResult(action=action)
        content = {}
        for name, field in schema["properties"].items():
            choices = field.get("enum")
            content[name] = choices[-1] if choices else "typed by python"
        return types.ElicitResult(action="accept", content=content)

    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=on_elicitation) as session:
            await session.initialize()
            result = await session.call_tool(
                "codex",
                {"prompt": "ask me", "model": "gpt-5-codex", "approval-policy": "never"},
                read_timeout_seconds=WAIT_SECONDS,
            )
    return {
        "elicitations": seen,
        "isError": bool(result.is_error),
        "text": [block.text for block in result.content if block.type == "text"],
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2]))))
