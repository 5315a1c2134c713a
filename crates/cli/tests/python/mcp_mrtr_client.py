"""Drives `deputy mcp-server` with the official MCP Python SDK's `Client` on protocol
2026-07-28 (no handshake: `server/discover`, then stateless requests), where approvals
are Multi Round-Trip Requests: `tools/call` answers `InputRequiredResult`, and the retry
with `inputResponses` and the echoed `requestState` continues the paused turn.

Usage: mcp_mrtr_client.py <http://…/mcp | deputy binary> <approve|manual|abandon|conversation>
  approve: `Client.call_tool` with an elicitation callback that approves; the SDK
           runs the round trips itself.
  manual:  the round trips by hand (`session.call_tool(..., allow_input_required=True)`):
           a forged `requestState`, an altered one, then the real one with a declined
           answer.
  abandon: the first round trip, then no answer for 3 s (longer than the server's
           approval timeout in the test), then a retry with the state and no answers.
  conversation: `conversationCreate` with a prompt whose command needs approval, then
           `conversationStream` by hand: its first result asks the question, the retry
           approves and streams on to the turn's end.
With a binary, the SDK launches `<binary> mcp-server` over stdio (DEPUTY_HOME and HOME
passed on).
Prints one JSON object on stdout; exits non-zero on any failure.
"""

import asyncio
import json
import os
import sys

from mcp import Client, StdioServerParameters, types
from mcp.shared.exceptions import MCPError

# Bound for waits the server should satisfy at once; a hang becomes a failure.
WAIT_SECONDS = 30

CODEX_CALL = {
    "prompt": "run the command",
    "approval-policy": "untrusted",
    "sandbox": "danger-full-access",
}


def server_of(target: str):
    if target.startswith("http"):
        return target
    return StdioServerParameters(
        command=target,
        args=["mcp-server"],
        env={
            "DEPUTY_HOME": os.environ["DEPUTY_HOME"],
            "HOME": os.environ["HOME"],
            "RUST_LOG": "warn",
        },
        cwd=os.getcwd(),
    )


def texts(result) -> list:
    return [b.text for b in result.content if b.type == "text"]


def tamper(state: str) -> str:
    middle = len(state) // 2
    swapped = "B" if state[middle] == "A" else "A"
    return state[:middle] + swapped + state[middle + 1 :]


async def main(target: str, scenario: str) -> dict:
    seen = {"scenario": scenario}
    questions = []
    methods = set()

    async def on_elicit(context, params: types.ElicitRequestParams):
        questions.append({"message": params.message, "meta": params.meta})
        return types.ElicitResult(action="accept", content={"decision": "approved"})

    async def on_message(message) -> None:
        method = getattr(getattr(message, "root", message), "method", None)
        if method:
            methods.add(method)

    async with Client(
        server_of(target),
        elicitation_callback=on_elicit,
        message_handler=on_message,
        read_timeout_seconds=WAIT_SECONDS,
    ) as client:
        seen["protocolVersion"] = client.protocol_version
        if scenario == "approve":
            result = await client.call_tool("codex", CODEX_CALL)
            seen["isError"] = bool(result.is_error)
            seen["text"] = texts(result)
            seen["threadId"] = (result.structured_content or {}).get("threadId")
        elif scenario == "abandon":
            await client.list_tools()
            first = await client.session.call_tool(
                "codex", CODEX_CALL, allow_input_required=True
            )
            seen["firstResult"] = type(first).__name__
            await asyncio.sleep(3)
            final = await client.session.call_tool(
                "codex",
                CODEX_CALL,
                allow_input_required=True,
                request_state=first.request_state,
            )
            seen["finalResult"] = type(final).__name__
            seen["isError"] = bool(getattr(final, "is_error", True))
            seen["text"] = texts(final) if hasattr(final, "content") else []
        elif scenario == "conversation":
            created = await client.call_tool(
                "conversationCreate",
                {
                    "prompt": "run the command",
                    "approval_policy": "untrusted",
                    "sandbox": "danger-full-access",
                },
            )
            stream = {"conversation_id": created.structured_content["conversation_id"]}
            first = await client.session.call_tool(
                "conversationStream", stream, allow_input_required=True
            )
            seen["firstResult"] = type(first).__name__
            requests = first.input_requests or {}
            seen["inputRequests"] = {
                key: {"method": request.method, "message": request.params.message}
                for key, request in requests.items()
            }
            approved = {
                key: types.ElicitResult(action="accept", content={"decision": "approved"})
                for key in requests
            }
            final = await client.session.call_tool(
                "conversationStream",
                stream,
                allow_input_required=True,
                input_responses=approved,
                request_state=first.request_state,
            )
            seen["finalResult"] = type(final).__name__
            seen["structured"] = getattr(final, "structured_content", None)
        else:
            await client.list_tools()
            first = await client.session.call_tool(
                "codex", CODEX_CALL, allow_input_required=True
            )
            seen["firstResult"] = type(first).__name__
            requests = first.input_requests or {}
            seen["inputRequests"] = {
                key: {
                    "method": request.method,
                    "message": request.params.message,
                    "meta": request.params.meta,
                }
                for key, request in requests.items()
            }
            declined = {key: types.ElicitResult(action="decline") for key in requests}
            refusals = []
            for forged in ["not-a-state", tamper(first.request_state)]:
                try:
                    await client.session.call_tool(
                        "codex",
                        CODEX_CALL,
                        allow_input_required=True,
                        input_responses=declined,
                        request_state=forged,
                    )
                    refusals.append("accepted")
                except MCPError as err:
                    refusals.append({"code": err.code, "message": str(err)})
            seen["forged"] = refusals
            final = await client.session.call_tool(
                "codex",
                CODEX_CALL,
                allow_input_required=True,
                input_responses=declined,
                request_state=first.request_state,
            )
            seen["finalResult"] = type(final).__name__
            seen["isError"] = bool(getattr(final, "is_error", True))
            seen["text"] = texts(final) if hasattr(final, "content") else []
    seen["questions"] = questions
    seen["methods"] = sorted(methods)
    return seen


if __name__ == "__main__":
    scenarios = ("approve", "manual", "abandon", "conversation")
    if len(sys.argv) != 3 or sys.argv[2] not in scenarios:
        print(
            "usage: mcp_mrtr_client.py <url | binary> <approve|manual|abandon|conversation>",
            file=sys.stderr,
        )
        sys.exit(2)
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2])), default=str))
