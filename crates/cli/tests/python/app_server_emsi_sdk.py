"""Drives `deputy app-server` with codex-app-server-sdk (import name
`codex_app_server_sdk`), as its users do: `CodexClient.connect_stdio` launches
`<deputy> app-server`, turns are streamed as completed steps, approvals go to a callback.

Usage: app_server_emsi_sdk.py <deputy binary | ws://HOST:PORT> <workspace>
Environment: DEPUTY_HOME (inherited by the server). With a `ws://` URL the SDK's
WebSocket transport connects to a listening `deputy app-server --listen` instead (with
the bearer token in $DEPUTY_TEST_TOKEN if set), and each "process" is a connection.

One process: `model/list`, a thread, a turn whose command and file change are accepted
and whose second command is declined, then a turn whose command outlives the SDK's
inactivity timeout and is cancelled with the continuation it hands back. A second
process: the thread resumed, and one more turn on it.
Prints one JSON object on stdout; exits non-zero on any failure.
"""

import asyncio
import json
import os
import sys

from codex_app_server_sdk import (
    CodexClient,
    CodexTurnInactiveError,
    CommandApprovalRequest,
    ThreadConfig,
)

# Bound for each wait the server should satisfy promptly; a hang becomes a failure.
WAIT_SECONDS = 30


def connect(deputy, workspace, **options):
    if deputy.startswith("ws://"):
        return CodexClient.connect_websocket(
            url=deputy,
            token=os.environ.get("DEPUTY_TEST_TOKEN"),
            request_timeout=WAIT_SECONDS,
            **options,
        )
    return CodexClient.connect_stdio(
        command=[deputy, "app-server"],
        cwd=workspace,
        env=dict(os.environ),
        request_timeout=WAIT_SECONDS,
        **options,
    )


async def first_process(deputy, workspace, out):
    asked = []

    async def decide(request):
        # Everything is accepted but the command that would make `refused.txt`.
        kind = "command" if isinstance(request, CommandApprovalRequest) else "fileChange"
        refused = kind == "command" and "refused" in (request.command or "")
        decision = "decline" if refused else "accept"
        asked.append({"kind": kind, "answer": decision})
        return decision

    async with connect(deputy, workspace, inactivity_timeout=WAIT_SECONDS) as client:
        client.set_approval_handler(decide)
        await client.initialize()
        models = await client.list_models()
        out["models"] = [model["id"] for model in models["data"]]
        thread = await client.start_thread(ThreadConfig(cwd=workspace))
        out["threadId"] = thread.thread_id

        steps = [step async for step in thread.chat("make the files")]
        out["steps"] = [[step.step_type, step.item_type] for step in steps]
        out["approvals"] = list(asked)

        # `sleep` is silent: past the inactivity timeout the SDK hands back a
        # continuation, with which it cancels the turn.
        try:
            await thread.chat_once("wait a while", inactivity_timeout=1.0)
            out["cancelled"] = "the turn was not inactive"
        except CodexTurnInactiveError as inactive:
            cancelled = await client.cancel(inactive.continuation, timeout=WAIT_SECONDS)
            out["cancelled"] = {
                "wasInterrupted": cancelled.was_interrupted,
                "wasCompleted": cancelled.was_completed,
            }


async def second_process(deputy, workspace, out):
    async with connect(deputy, workspace) as client:
        thread = await client.resume_thread(out["threadId"])
        read = await thread.read()
        out["resumedTurns"] = [turn["status"] for turn in read["thread"]["turns"]]
        result = await thread.chat_once("and now?")
        out["resumedAnswer"] = result.final_text


async def main(deputy, workspace):
    out = {}
    await asyncio.wait_for(first_process(deputy, workspace, out), 3 * WAIT_SECONDS)
    await asyncio.wait_for(second_process(deputy, workspace, out), 3 * WAIT_SECONDS)
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2]))))
