"""Drives `deputy app-server` with codex-python-sdk-unofficial (import name
`codex_agent_sdk`), as its users do: the SDK launches `<deputy> app-server --listen
stdio://` itself and validates results with its generated models.

Usage: app_server_unofficial_sdk.py <deputy binary> <workspace>
Environment: DEPUTY_HOME (the SDK hands the server its own environment).

One process: the handshake, a typed `model/list`, `thread/start`, a turn whose command
and file change are accepted and whose second command is declined, then a turn
interrupted while its command runs. A second process: `thread/resume` of that thread
and one more turn. Every notification is parsed with the SDK's typed registry.
Prints one JSON object on stdout; exits non-zero on any failure.
"""

import asyncio
import json
import sys

from codex_agent_sdk import AppServerClient, AppServerConfig
from codex_agent_sdk.generated.stable import ModelListResponse
from codex_agent_sdk.protocol.registries import parse_server_notification

# Bound for each wait the server should satisfy promptly; a hang becomes a failure.
WAIT_SECONDS = 30


def config(deputy, workspace):
    return AppServerConfig(codex_bin=deputy, cwd=workspace, client_name="deputy-tests")


async def collect(subscription, into):
    async for notification in subscription.iter_notifications():
        into.append(notification)


def typed_failures(notifications):
    """Notifications the SDK's generated models refuse, with why."""
    failures = []
    for notification in notifications:
        try:
            parse_server_notification(notification)
        except Exception as error:  # noqa: BLE001 - every refusal is reported
            failures.append(f"{notification.method}: {error}")
    return failures


async def turn_completed(subscription, turn_id):
    """The typed `turn/completed` of `turn_id`, read from a subscription made before the
    turn started (a short turn can end before `turn/start`'s caller looks). Reading ends
    the subscription."""
    async for notification in subscription.iter_notifications():
        typed = parse_server_notification(notification)
        if typed.params.turn.id == turn_id:
            return typed.params.turn


async def answer_approvals(subscription, client, decisions, asked):
    requests = subscription.iter_requests()
    for decision in decisions:
        request = await anext(requests)
        asked.append(
            {
                "method": request.method,
                "availableDecisions": request.params.get("availableDecisions"),
                "answer": decision,
            }
        )
        await client.respond_server_request(request.id, {"decision": decision})


async def first_process(deputy, workspace, out):
    notifications = []
    async with AppServerClient(config(deputy, workspace)) as client:
        await client.initialize()
        collector = asyncio.create_task(collect(client.subscribe_notifications(), notifications))
        models = await client.request("model/list", {}, response_model=ModelListResponse)
        out["models"] = [
            {
                "id": model.id,
                "defaultReasoningEffort": model.default_reasoning_effort.value,
                "supportedReasoningEfforts": [
                    option.reasoning_effort.value for option in model.supported_reasoning_efforts
                ],
            }
            for model in models.data
        ]

        started = await client.thread_start(cwd=workspace)
        thread_id = started.thread.id
        out["threadId"] = thread_id
        out["approvalsReviewer"] = started.approvals_reviewer.value

        # A command (accepted), a file change (accepted), a command (declined).
        approvals = client.subscribe_server_requests()
        ends = client.subscribe_notifications(method="turn/completed")
        turn = await client.turn_start(thread_id=thread_id, input="make the files")
        done = asyncio.create_task(turn_completed(ends, turn.turn.id))
        asked = []
        await asyncio.wait_for(
            answer_approvals(approvals, client, ["accept", "accept", "decline"], asked),
            WAIT_SECONDS,
        )
        first = await asyncio.wait_for(done, WAIT_SECONDS)
        out["approvals"] = asked
        out["firstTurn"] = first.status.value

        # A command that runs until the turn is interrupted.
        commands = client.subscribe_notifications(method="item/started")
        ends = client.subscribe_notifications(method="turn/completed")
        turn = await client.turn_start(
            thread_id=thread_id, input="wait a while", approval_policy="never"
        )
        done = asyncio.create_task(turn_completed(ends, turn.turn.id))

        async def command_started():
            async for notification in commands.iter_notifications():
                if notification.params["item"]["type"] == "commandExecution":
                    return

        await asyncio.wait_for(command_started(), WAIT_SECONDS)
        await client.turn_interrupt(thread_id=thread_id, turn_id=turn.turn.id)
        interrupted = await asyncio.wait_for(done, WAIT_SECONDS)
        out["interruptedTurn"] = interrupted.status.value
        collector.cancel()
    out["methods"] = sorted({n.method for n in notifications})
    out["typedFailures"] = typed_failures(notifications)


async def second_process(deputy, workspace, out):
    async with AppServerClient(config(deputy, workspace)) as client:
        await client.initialize()
        resumed = await client.thread_resume(thread_id=out["threadId"])
        out["resumedTurns"] = [turn.status.value for turn in resumed.thread.turns]
        out["resumedItems"] = sorted(
            {item.root.type for turn in resumed.thread.turns for item in turn.items}
        )
        ends = client.subscribe_notifications(method="turn/completed")
        turn = await client.turn_start(thread_id=out["threadId"], input="and now?")
        done = await asyncio.wait_for(turn_completed(ends, turn.turn.id), WAIT_SECONDS)
        out["resumedTurn"] = done.status.value


async def main(deputy, workspace):
    out = {}
    await first_process(deputy, workspace, out)
    await second_process(deputy, workspace, out)
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2]))))
