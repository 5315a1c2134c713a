"""Drives `deputy app-server` with codex-python-sdk (import name `codex_python_sdk`),
which launches `<deputy> app-server --enable guardian_approval -c web_search="live"`.

Usage: app_server_codex_python_sdk.py <deputy binary> <workspace>
Environment: DEPUTY_HOME (inherited by the server).

Connects (the handshake), lists the models, runs one turn to its answer and lists the
threads.
Prints one JSON object on stdout; exits non-zero on any failure.
"""

import asyncio
import json
import os
import sys

from codex_python_sdk import AsyncCodexAgenticClient

# Bound for the whole conversation; a hang becomes a failure.
WAIT_SECONDS = 60


async def main(deputy, workspace):
    client = AsyncCodexAgenticClient(
        codex_command=deputy,
        env=dict(os.environ),
        process_cwd=workspace,
        default_thread_params={"cwd": workspace},
    )
    out = {"launchArgs": client._build_server_args()}
    async with client:
        models = await client.model_list()
        out["models"] = [model["id"] for model in models["data"]]
        response = await client.responses_create(prompt="hello")
        out["answer"] = response.text
        out["threadId"] = response.thread_id
        # Its listing asks for `sortKey: "updated_at"`.
        out["listed"] = [thread["id"] for thread in await client.thread_list(limit=5)]
    return out


if __name__ == "__main__":
    result = asyncio.run(asyncio.wait_for(main(sys.argv[1], sys.argv[2]), WAIT_SECONDS))
    print(json.dumps(result))
