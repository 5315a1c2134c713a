// Drives `deputy mcp-server` with the official MCP TypeScript SDK through one
// approval scenario and prints what it saw.
//
// Usage: node mcp_sdk_client.mjs <deputy binary | http://…/mcp> <approve|cancel|heartbeat>
//   A URL instead of the binary: the SDK's Streamable HTTP client talks to a listening
//   `deputy mcp-server --listen` (with `Authorization: Bearer $DEPUTY_TEST_TOKEN` if set).
//   approve:   a `codex` call whose command needs approval; the client accepts.
//   cancel:    the same, but the client never answers: it cancels the tool call and
//              waits for the server to withdraw the question.
//   heartbeat: a `codex` call whose command runs long, made with a 3 s request timeout
//              that progress notifications restart (`resetTimeoutOnProgress`).
// Environment: DEPUTY_HOME and HOME, passed on to the server explicitly (the SDK
// gives the server a filtered environment). The server runs in the current directory.
// Prints one JSON object on stdout; exits non-zero on any failure.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

// Bound for waits the server should satisfy at once; a hang becomes a failure.
const WAIT_MS = 20_000;

/** Resolves with `promise`, or rejects after WAIT_MS saying what never happened. */
function within(promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} within ${WAIT_MS} ms`)), WAIT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A `codex` call whose scripted command needs approval. */
const CODEX_CALL = {
  name: "codex",
  arguments: {
    prompt: "run the command",
    "approval-policy": "untrusted",
    sandbox: "danger-full-access",
  },
};

/** The request timeout of the heartbeat scenario: far shorter than its command. */
const HEARTBEAT_TIMEOUT_MS = 3_000;

/** A `codex` call whose scripted command runs without asking. */
const UNASKED_CALL = {
  name: "codex",
  arguments: { prompt: "run the long command", "approval-policy": "never" },
};

/** The transport to `deputy`: a spawned binary, or a listening server's URL. */
function transportTo(deputy) {
  if (deputy.startsWith("http")) {
    const token = process.env.DEPUTY_TEST_TOKEN;
    const headers = token ? { Authorization: `Bearer ${token}` } : {};
    return new StreamableHTTPClientTransport(new URL(deputy), { requestInit: { headers } });
  }
  return new StdioClientTransport({
    command: deputy,
    args: ["mcp-server"],
    env: {
      DEPUTY_HOME: process.env.DEPUTY_HOME,
      HOME: process.env.HOME,
      PATH: process.env.PATH,
      RUST_LOG: "warn",
    },
    cwd: process.cwd(),
    stderr: "inherit",
  });
}

async function main(deputy, scenario) {
  const transport = transportTo(deputy);
  const client = new Client(
    { name: "deputy-ts-test", version: "0" },
    { capabilities: { elicitation: {} } },
  );

  const eventTypes = [];
  let turnEnded;
  const turnEnd = new Promise((resolve) => (turnEnded = resolve));
  client.fallbackNotificationHandler = async (notification) => {
    if (notification.method !== "codex/event") return;
    const type = notification.params.msg.type;
    eventTypes.push(type);
    if (["task_complete", "turn_aborted", "error"].includes(type)) turnEnded(type);
  };

  const questions = [];
  const toolCall = new AbortController();
  let withdrawn;
  const withdrawal = new Promise((resolve) => (withdrawn = resolve));
  client.setRequestHandler(ElicitRequestSchema, (request, extra) => {
    questions.push({ id: extra.requestId, message: request.params.message });
    if (scenario === "approve") {
      return { action: "accept", content: { decision: "approved" } };
    }
    // The user walks away: the call is cancelled and this question left open until
    // the server withdraws it, which the SDK reports through `extra.signal`.
    return new Promise((_, reject) => {
      extra.signal.addEventListener("abort", () => {
        withdrawn({ requestId: extra.requestId, reason: String(extra.signal.reason) });
        reject(new Error("withdrawn"));
      });
      toolCall.abort("the user walked away");
    });
  });

  await client.connect(transport);
  // Every message from the server, as the SDK received it.
  const received = [];
  const dispatch = transport.onmessage;
  transport.onmessage = (message, extra) => {
    received.push(message);
    dispatch?.(message, extra);
  };

  const seen = { scenario };
  const progress = [];
  const started = Date.now();
  const options =
    scenario === "heartbeat"
      ? {
          timeout: HEARTBEAT_TIMEOUT_MS,
          resetTimeoutOnProgress: true,
          onprogress: (p) => progress.push({ atMs: Date.now() - started, message: p.message }),
        }
      : { signal: toolCall.signal, timeout: WAIT_MS };
  try {
    const call = scenario === "heartbeat" ? UNASKED_CALL : CODEX_CALL;
    const result = await client.callTool(call, undefined, options);
    seen.callOutcome = "result";
    seen.isError = Boolean(result.isError);
    seen.text = result.content.filter((b) => b.type === "text").map((b) => b.text);
    seen.structuredContent = result.structuredContent;
  } catch (err) {
    seen.callOutcome = toolCall.signal.aborted ? "cancelled" : `failed: ${err}`;
  }
  seen.elapsedMs = Date.now() - started;
  seen.progress = progress;
  if (scenario === "cancel") {
    seen.withdrawal = await within(withdrawal, "the open question was not withdrawn");
  }
  seen.turnEnd = await within(turnEnd, "the turn did not end");
  seen.questions = questions;
  seen.cancellations = received
    .filter((m) => m.method === "notifications/cancelled")
    .map((m) => m.params);
  seen.eventTypes = [...new Set(eventTypes)].sort();
  await client.close();
  return seen;
}

const [deputy, scenario] = process.argv.slice(2);
if (!deputy || !["approve", "cancel", "heartbeat"].includes(scenario)) {
  console.error("usage: mcp_sdk_client.mjs <deputy binary> <approve|cancel|heartbeat>");
  process.exit(2);
}
main(deputy, scenario).then(
  (seen) => console.log(JSON.stringify(seen)),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
