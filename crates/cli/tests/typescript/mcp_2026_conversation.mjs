// A 2026-07-28 client of `deputy mcp-server` written from the specification on plain
// `fetch` (Streamable HTTP) or a child process (stdio), so that it sees every message
// the server sends — the SDKs drop notifications whose method they do not know, and
// the conversation tools' events are such notifications.
//
// It creates a conversation whose first turn runs a command needing approval, then
// streams it with `conversationStream`: the call's result asks the question
// (`InputRequiredResult`), and the retry carrying `inputResponses` and the
// `requestState` approves it and streams on to the turn's end. A third stream, of the
// idle conversation, is its snapshot and `{}`.
//
// With `two` (HTTP only), two streams of the conversation are opened at once; both are
// asked, the first approves, the second's later denial finds the question settled.
//
// Usage: node mcp_2026_conversation.mjs <http://…/mcp | deputy binary> [two]
// Prints one JSON object on stdout: per call, the notifications that came with it
// (in order), the event types of its `initial_state`, and its result. Exits non-zero on any failure.

import { spawn } from "node:child_process";
import readline from "node:readline";

// Bound for waits the server should satisfy at once; a hang becomes a failure.
const WAIT_MS = 30_000;

const PROTOCOL = "2026-07-28";

const META = {
  "io.modelcontextprotocol/protocolVersion": PROTOCOL,
  "io.modelcontextprotocol/clientCapabilities": { elicitation: {} },
  "io.modelcontextprotocol/clientInfo": { name: "raw-2026", version: "0" },
};

function within(promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} within ${WAIT_MS} ms`)), WAIT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Streamable HTTP: each request its own POST, its notifications in its SSE response. */
class Http {
  constructor(url) {
    this.url = url;
  }

  async request(message, notifications) {
    const response = await fetch(this.url, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        Accept: "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL,
        // The routing headers of 2026-07-28 (SEP-2243), mirroring the body.
        "Mcp-Method": message.method,
        "Mcp-Name": message.params.name,
      },
      body: JSON.stringify(message),
    });
    if (response.status !== 200) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
    if (!response.headers.get("content-type")?.startsWith("text/event-stream")) {
      return response.json();
    }
    const decoder = new TextDecoder();
    let buffer = "";
    for await (const chunk of response.body) {
      buffer += decoder.decode(chunk, { stream: true }).replaceAll("\r\n", "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = block
          .split("\n")
          .filter((line) => line.startsWith("data:"))
          .map((line) => line.slice(5).replace(/^ /, ""))
          .join("\n");
        if (data === "") continue;
        const received = JSON.parse(data);
        if (received.id === message.id && !received.method) return received;
        notifications.push(received);
      }
    }
    throw new Error("the response stream ended without the response");
  }

  close() {}
}

/** stdio: one line per message; what arrives while a request waits is its company. */
class Stdio {
  constructor(binary) {
    this.child = spawn(binary, ["mcp-server"], { stdio: ["pipe", "pipe", "inherit"] });
    this.waiting = null;
    readline.createInterface({ input: this.child.stdout }).on("line", (line) => {
      if (!line.trim() || !this.waiting) return;
      const received = JSON.parse(line);
      if (received.id === this.waiting.id && !received.method) this.waiting.resolve(received);
      else this.waiting.notifications.push(received);
    });
  }

  request(message, notifications) {
    return new Promise((resolve) => {
      this.waiting = { id: message.id, resolve, notifications };
      this.child.stdin.write(JSON.stringify(message) + "\n");
    });
  }

  close() {
    this.child.stdin.end();
  }
}

let nextId = 1;

/** One `tools/call`; returns its result and the notifications that came with it. */
async function call(transport, name, args, extra = {}) {
  const notifications = [];
  const message = {
    jsonrpc: "2.0",
    id: nextId++,
    method: "tools/call",
    params: { name, arguments: args, _meta: META, ...extra },
  };
  const response = await within(transport.request(message, notifications), `${name}'s result`);
  if (response.error) throw new Error(`${name}: ${JSON.stringify(response.error)}`);
  return { result: response.result, notifications };
}

/** What a test reads of one call. */
const seen = (step) => ({
  methods: step.notifications.map((n) => n.method ?? `response:${n.id}`),
  snapshot: step.notifications
    .filter((n) => n.method === "notifications/initial_state")
    .flatMap((n) => n.params.initial_state.events.map((event) => event.msg.type)),
  result: step.result,
});

/** Input responses giving `content` to every request of `result`. */
function answering(result, content) {
  const keys = Object.keys(result.inputRequests ?? {});
  return Object.fromEntries(keys.map((key) => [key, { action: "accept", content }]));
}

/** Two streams of one conversation over HTTP, both asked; the first approves. */
async function two(url) {
  const transport = new Http(url);
  const created = await call(transport, "conversationCreate", {
    prompt: "run the command",
    approval_policy: "untrusted",
    sandbox: "danger-full-access",
  });
  const stream = { conversation_id: created.result.structuredContent.conversation_id };
  const [a, b] = await Promise.all([
    call(transport, "conversationStream", stream),
    call(transport, "conversationStream", stream),
  ]);
  const aDone = await call(transport, "conversationStream", stream, {
    inputResponses: answering(a.result, { decision: "approved" }),
    requestState: a.result.requestState,
  });
  // Too late: the question was answered through the other stream.
  const bDone = await call(transport, "conversationStream", stream, {
    inputResponses: answering(b.result, { decision: "denied" }),
    requestState: b.result.requestState,
  });
  return { a: seen(a), aDone: seen(aDone), b: seen(b), bDone: seen(bDone) };
}

async function main(target) {
  if (process.argv[3] === "two") return two(target);
  const transport = target.startsWith("http") ? new Http(target) : new Stdio(target);
  try {
    const created = await call(transport, "conversationCreate", {
      prompt: "run the command",
      approval_policy: "untrusted",
      sandbox: "danger-full-access",
    });
    const stream = { conversation_id: created.result.structuredContent.conversation_id };
    const first = await call(transport, "conversationStream", stream);
    const second = await call(transport, "conversationStream", stream, {
      inputResponses: answering(first.result, { decision: "approved" }),
      requestState: first.result.requestState,
    });
    // The conversation is idle now: a new stream is its snapshot, then `{}`.
    const third = await call(transport, "conversationStream", stream);
    return { first: seen(first), second: seen(second), third: seen(third) };
  } finally {
    transport.close();
  }
}

main(process.argv[2]).then(
  (seen) => {
    process.stdout.write(JSON.stringify(seen) + "\n");
    process.exit(0);
  },
  (err) => {
    console.error(err?.stack ?? String(err));
    process.exit(1);
  },
);
