"""Drives `deputy mcp-server` with the official MCP Python SDK and prints what it saw:
initialize, tools/list, a `codex` call with a progress callback, then `codex-reply`.

Usage: mcp_sdk_client.py <deputy binary>
Environment: DEPUTY_HOME (passed on to the server explicitly, because the SDK gives
the server a filtered environment) and HOME (likewise).
Prints one JSON object on stdout; exits non-zero on any failure.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.extension import NotificationBinding
from mcp.client.stdio import stdio_client
from pydantic import BaseModel, ConfigDict, Field

# Bound for waits the server should satisfy at once; a hang becomes a failure.
WAIT_SECONDS = 20


class CodexEvent(BaseModel):
    """Params of deputy's `codex/event` notification."""

    model_config = ConfigDict(extra="allow")
    meta: dict = Field(alias="_meta")
    id: str
    msg: dict


async def main(deputy: str) -> dict:
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
    events = []
    turn_ended = asyncio.Event()

    async def on_codex_event(event: CodexEvent) -> None:
        events.append(event)
        if event.msg.get("type") in ("task_complete", "turn_aborted", "error"):
            turn_ended.set()

    progress = []

    async def on_progress(value, total, message) -> None:
        progress.append({"progress": value, "message": message})

    async with stdio_client(params) as (read, write):
        binding = NotificationBinding(
            method="codex/event", params_type=CodexEvent, handler=on_codex_event
        )
        async with ClientSession(read, write, notification_bindings=[binding]) as session:
            initialized = await session.initialize()
            tools = await session.list_tools()
            result = await session.call_tool(
                "codex",
                {"prompt": "say hi from python", "approval-policy": "never"},
                read_timeout_seconds=WAIT_SECONDS,
                progress_callback=on_progress,
            )
            # Bound notifications are delivered through a queue and may trail the result.
            await asyncio.wait_for(turn_ended.wait(), WAIT_SECONDS)
            reply = await session.call_tool(
                "codex-reply",
                {"threadId": result.structured_content["threadId"], "prompt": "and again"},
                read_timeout_seconds=WAIT_SECONDS,
            )
    return {
        "protocolVersion": initialized.protocol_version,
        "serverName": initialized.server_info.name,
        "tools": [tool.name for tool in tools.tools],
        "isError": bool(result.is_error),
        "text": [block.text for block in result.content if block.type == "text"],
        "structuredContent": result.structured_content,
        "progressMessages": [p["message"] for p in progress],
        "reply": reply.structured_content,
        "eventTypes": sorted({event.msg.get("type") for event in events}),
        "eventThreadIds": sorted({event.meta.get("threadId") for event in events}),
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1]))))
