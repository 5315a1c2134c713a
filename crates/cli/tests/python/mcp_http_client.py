"""Drives a listening `deputy mcp-server --listen` with the official MCP Python SDK over
Streamable HTTP (`streamable_http_client` + `ClientSession`, the 2025-11-25 handshake)
through one approval scenario, and prints what it saw.

Usage: mcp_http_client.py <http://…/mcp> <approve|cancel>
  approve: a `codex` call whose command needs approval; the client accepts.
  cancel:  the same, but the client cancels the call while the question is open; then
           it continues the thread with `codex-reply`, which only an idle thread takes.
Prints one JSON object on stdout; exits non-zero on any failure.
"""

import asyncio
import json
import sys

import anyio
from mcp import ClientSession, types
from mcp.client.extension import NotificationBinding
from mcp.client.streamable_http import streamable_http_client
from pydantic import BaseModel, ConfigDict, Field

# Bound for waits the server should satisfy at once; a hang becomes a failure.
WAIT_SECONDS = 20

CODEX_CALL = {
    "prompt": "run the command",
    "approval-policy": "untrusted",
    "sandbox": "danger-full-access",
}


class CodexEvent(BaseModel):
    """Params of deputy's `codex/event` notification."""

    model_config = ConfigDict(extra="allow")
    meta: dict = Field(alias="_meta")
    id: str
    msg: dict


async def main(url: str, scenario: str) -> dict:
    events = []
    thread_ids = []
    turn_ended = asyncio.Event()

    async def on_codex_event(event: CodexEvent) -> None:
        events.append(event.msg.get("type"))
        if event.msg.get("type") == "session_configured":
            thread_ids.append(event.msg.get("session_id"))
        if event.msg.get("type") in ("task_complete", "turn_aborted", "error"):
            turn_ended.set()

    questions = []
    asked = asyncio.Event()

    async def on_elicit(context, params: types.ElicitRequestParams):
        questions.append({"message": params.message})
        if scenario == "approve":
            return types.ElicitResult(action="accept", content={"decision": "approved"})
        asked.set()
        # The user walks away; the question stays open until the call is cancelled.
        await anyio.sleep(WAIT_SECONDS)
        return types.ElicitResult(action="decline")

    seen = {"scenario": scenario}
    binding = NotificationBinding(
        method="codex/event", params_type=CodexEvent, handler=on_codex_event
    )
    async with streamable_http_client(url) as (read, write, *_):
        async with ClientSession(
            read, write, elicitation_callback=on_elicit, notification_bindings=[binding]
        ) as session:
            initialized = await session.initialize()
            seen["protocolVersion"] = initialized.protocol_version
            if scenario == "approve":
                result = await session.call_tool(
                    "codex", CODEX_CALL, read_timeout_seconds=WAIT_SECONDS
                )
                seen["callOutcome"] = "result"
                seen["isError"] = bool(result.is_error)
                seen["text"] = [b.text for b in result.content if b.type == "text"]
                seen["structuredContent"] = result.structured_content
                await asyncio.wait_for(turn_ended.wait(), WAIT_SECONDS)
            else:
                call = asyncio.create_task(
                    session.call_tool("codex", CODEX_CALL, read_timeout_seconds=WAIT_SECONDS)
                )
                await asyncio.wait_for(asked.wait(), WAIT_SECONDS)
                call.cancel()
                try:
                    await call
                    seen["callOutcome"] = "result"
                except asyncio.CancelledError:
                    seen["callOutcome"] = "cancelled"
                # The cancelled turn ends: the thread takes the next turn at once.
                reply = None
                for _ in range(WAIT_SECONDS * 10):
                    reply = await session.call_tool(
                        "codex-reply",
                        {"threadId": thread_ids[0], "prompt": "after the cancel"},
                        read_timeout_seconds=WAIT_SECONDS,
                    )
                    text = [b.text for b in reply.content if b.type == "text"]
                    # Until the interrupted turn has wound down the thread says it is busy.
                    if not (reply.is_error and any("busy" in t for t in text)):
                        break
                    await asyncio.sleep(0.1)
                seen["reply"] = {
                    "isError": bool(reply.is_error),
                    "text": [b.text for b in reply.content if b.type == "text"],
                }
    seen["questions"] = questions
    seen["eventTypes"] = sorted(set(events))
    return seen


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[2] not in ("approve", "cancel"):
        print("usage: mcp_http_client.py <url> <approve|cancel>", file=sys.stderr)
        sys.exit(2)
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2]))))
