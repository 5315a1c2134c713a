"""An MCP server over stdio that misbehaves on purpose, for deputy's fault tests.

Usage: fault_server.py MODE PIDFILE
  MODE silent: reads its input and never answers (not even `initialize`);
  MODE normal: answers; its tools are `pid` (answers its process id), `crash` (exits
               in the middle of the call) and `hang` (never answers);
  MODE stubborn: answers like `normal`, but ignores SIGTERM, keeps running after its
               input ends, and starts a child (`sleep`) that does the same.
It writes its process id to PIDFILE (one line per start, appended) before anything else,
and in `stubborn` mode its child's too.
Standard library only: newline-delimited JSON-RPC, as MCP's stdio transport is.
"""

import json
import os
import signal
import subprocess
import sys
import time

mode, pidfile = sys.argv[1], sys.argv[2]
with open(pidfile, "a") as f:
    f.write(f"{os.getpid()}\n")
if mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen(["sleep", "600"], stdin=subprocess.DEVNULL)
    with open(pidfile, "a") as f:
        f.write(f"{child.pid}\n")

TOOLS = [
    {"name": name, "description": description,
     "inputSchema": {"type": "object", "properties": {}}}
    for name, description in [
        ("pid", "Answers the server's process id."),
        ("crash", "Exits in the middle of the call."),
        ("hang", "Never answers."),
    ]
]


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    if mode == "silent":
        continue
    message = json.loads(line)
    method, ident = message.get("method"), message.get("id")
    if ident is None or method is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": ident, "result": {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "fault-server", "version": "1"},
        }})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        tool = message["params"]["name"]
        if tool == "crash":
            os._exit(3)
        if tool == "hang":
            continue
        send({"jsonrpc": "2.0", "id": ident, "result": {
            "content": [{"type": "text", "text": f"pid {os.getpid()}"}]}})
    else:
        send({"jsonrpc": "2.0", "id": ident,
              "error": {"code": -32601, "message": f"no method {method}"}})

while mode == "stubborn":
    time.sleep(60)
