// A 2025-11-25 client of `deputy mcp-server --listen` written on plain `fetch`, so that
// it controls its SSE streams byte by byte, as the SDKs do not let a test:
//
//   resume:  a `codex` call whose command needs approval. The client reads the session's
//            standalone stream (where a session's `codex/event`s go) and the call's own
//            stream up to the approval question, cuts both, answers, and reconnects with
//            `Last-Event-ID`: the standalone stream from its first `codex/event` — so
//            the server must replay everything after it, including what the cut stream
//            already carried — and the call's stream from its last event. The server
//            must then follow the turn to its end and the call to its result.
//   resume2026: a stateless 2026-07-28 `codex` call whose response stream is cut
//            mid-turn and resumed (`GET` with `Last-Event-ID`, no session) from its first
//            `codex/event`.
//   snapshot: a conversation streamed (`conversationStream`) on the session's standalone
//            stream up to its turn's end, streamed again (a second snapshot), cut, and
//            resumed from the stream's first event: prints both lists of messages in full.
//
// Usage: node mcp_http_streams.mjs <http://…/mcp> <scenario>
// Prints one JSON object on stdout; exits non-zero on any failure.

// Bound for waits the server should satisfy at once; a hang becomes a failure.
const WAIT_MS = 30_000;

const PROTOCOL = "2025-11-25";

function within(promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} within ${WAIT_MS} ms`)), WAIT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Splits an SSE body into events: {id, retry, message} (message: parsed `data`). */
async function* sseEvents(body) {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true }).replaceAll("\r\n", "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event = { id: undefined, retry: undefined, data: [] };
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "id") event.id = value;
        else if (field === "retry") event.retry = value;
        else if (field === "data") event.data.push(value);
      }
      const data = event.data.join("\n");
      if (event.id === undefined && data === "") continue;
      // A priming event carries an id and no message.
      const message = data === "" ? null : JSON.parse(data);
      yield { id: event.id, message };
    }
  }
}

/** What a message is, in one word: `codex/event:<type>`, a method, `result`, `priming`. */
function kindOf(message) {
  if (message === null) return "priming";
  if (message.method === "codex/event") return `codex/event:${message.params?.msg?.type}`;
  if (message.method) return message.method;
  return message.error ? "error" : "result";
}

class Session {
  constructor(url) {
    this.url = url;
    this.id = undefined;
  }

  headers(extra = {}) {
    const headers = {
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      ...extra,
    };
    if (this.id) {
      headers["Mcp-Session-Id"] = this.id;
      headers["MCP-Protocol-Version"] = PROTOCOL;
    }
    return headers;
  }

  async post(message, signal) {
    return fetch(this.url, {
      method: "POST",
      headers: this.headers(),
      body: JSON.stringify(message),
      signal,
    });
  }

  async open() {
    const response = await this.post({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: PROTOCOL,
        capabilities: { elicitation: {} },
        clientInfo: { name: "raw-streams", version: "0" },
      },
    });
    if (response.status !== 200) throw new Error(`initialize: HTTP ${response.status}`);
    this.id = response.headers.get("mcp-session-id");
    await response.text();
    const initialized = await this.post({ jsonrpc: "2.0", method: "notifications/initialized" });
    if (initialized.status !== 202) throw new Error(`initialized: HTTP ${initialized.status}`);
  }

  /** Starts a `codex` call; returns its SSE response (not yet read). */
  async call(id, prompt, approvalPolicy, signal) {
    const response = await this.post(
      {
        jsonrpc: "2.0",
        id,
        method: "tools/call",
        params: { name: "codex", arguments: { prompt, "approval-policy": approvalPolicy } },
      },
      signal,
    );
    if (response.status !== 200) throw new Error(`tools/call: HTTP ${response.status}`);
    return response;
  }

  async answer(id, result) {
    const response = await this.post({ jsonrpc: "2.0", id, result });
    if (response.status !== 202) throw new Error(`answer: HTTP ${response.status}`);
  }

  /** The session's standalone SSE stream (GET without `Last-Event-ID`). */
  async standalone(signal) {
    const response = await fetch(this.url, {
      method: "GET",
      headers: {
        Accept: "text/event-stream",
        "Mcp-Session-Id": this.id,
        "MCP-Protocol-Version": PROTOCOL,
      },
      signal,
    });
    if (response.status !== 200) throw new Error(`standalone stream: HTTP ${response.status}`);
    return response;
  }

  async resume(lastEventId) {
    const response = await fetch(this.url, {
      method: "GET",
      headers: {
        Accept: "text/event-stream",
        "Mcp-Session-Id": this.id,
        "MCP-Protocol-Version": PROTOCOL,
        "Last-Event-ID": lastEventId,
      },
    });
    if (response.status !== 200) throw new Error(`resume: HTTP ${response.status}`);
    return response;
  }
}

/** Interleaves named SSE event streams: {stream, id, kind, message} in arrival order. */
function merge(sources) {
  const queue = [];
  let wake = () => {};
  for (const [stream, events] of Object.entries(sources)) {
    (async () => {
      try {
        for await (const { id, message } of events) {
          queue.push({ stream, id, kind: kindOf(message), message });
          wake();
        }
      } catch {
        // A stream this client cut ends here; one that ends early fails `readUntil`.
      }
    })();
  }
  return async () => {
    while (queue.length === 0) await new Promise((resolve) => (wake = resolve));
    return queue.shift();
  };
}

/** Takes events from `next` until `done(seen)`; returns what it took. */
async function readUntil(next, done, what) {
  const seen = [];
  const read = (async () => {
    while (!done(seen)) seen.push(await next());
  })();
  await within(read, what).catch((err) => {
    throw new Error(`${err.message}; seen: ${JSON.stringify(seen.map((e) => e.kind))}`);
  });
  return seen;
}

/** What a test reads of an event. */
const brief = ({ stream, id, kind }) => ({ stream, id, kind });

async function resume(url) {
  const session = new Session(url);
  await session.open();
  // A 2025-11-25 session's events ride its standalone GET stream; the call's own POST
  // stream carries its result. Both are cut at the question and both resumed.
  const cutGet = new AbortController();
  const cutPost = new AbortController();
  const standalone = await session.standalone(cutGet.signal);
  const call = await session.call(2, "run it", "untrusted", cutPost.signal);
  const before = await readUntil(
    merge({ get: sseEvents(standalone.body), post: sseEvents(call.body) }),
    (seen) => seen.at(-1)?.kind === "elicitation/create",
    "the approval question",
  );
  cutGet.abort();
  cutPost.abort();
  const question = before.at(-1).message;

  await session.answer(question.id, { action: "accept", content: { decision: "approved" } });
  // The standalone stream from its first event on (replaying what the cut stream already
  // carried); the call's stream from the last event it carried.
  const fromGet = before.find((event) => event.stream === "get" && event.kind.startsWith("codex/"));
  const fromPost = before.filter((event) => event.stream === "post").at(-1);
  const resumedGet = await session.resume(fromGet.id);
  const resumedPost = await session.resume(fromPost.id);
  const after = await readUntil(
    merge({ get: sseEvents(resumedGet.body), post: sseEvents(resumedPost.body) }),
    (seen) =>
      seen.some((event) => event.kind === "codex/event:task_complete") &&
      seen.some((event) => event.message?.id === 2 && !event.message.method),
    "the turn's end and the call's result",
  );
  const result = after.find((event) => event.message?.id === 2 && !event.message.method).message;
  return {
    before: before.map(brief),
    after: after.map(brief),
    resumedFrom: { get: fromGet.id, post: fromPost.id },
    text: result.result?.content?.map((block) => block.text),
    isError: result.result?.isError ?? false,
  };
}

/** A conversation's events on a standalone stream, cut and replayed from its start. */
async function snapshot(url) {
  const session = new Session(url);
  await session.open();
  const cut = new AbortController();
  const standalone = await session.standalone(cut.signal);
  const next = merge({ get: sseEvents(standalone.body) });
  const created = await session.post({
    jsonrpc: "2.0",
    id: 2,
    method: "tools/call",
    params: { name: "conversationCreate", arguments: { prompt: "say hello" } },
  });
  const body = await created.text();
  const conversation = body.match(/"conversation_id":"([^"]+)"/)?.[1];
  if (!conversation) throw new Error(`no conversation id in ${body}`);
  const stream = async (id) => {
    const response = await session.post({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name: "conversationStream", arguments: { conversation_id: conversation } },
    });
    await response.text();
  };
  // Everything up to the turn's end, in the snapshot or live; then a second stream,
  // whose snapshot holds the whole turn.
  const isSnapshot = (event) => event.kind === "notifications/initial_state";
  const ended = (event) =>
    event.kind === "task_complete" ||
    event.message?.params?.initial_state?.events?.some((e) => e.msg.type === "task_complete");
  await stream(3);
  const before = await readUntil(next, (seen) => seen.some(ended), "the turn's end");
  await stream(4);
  before.push(...(await readUntil(next, (seen) => seen.some(isSnapshot), "the second snapshot")));
  cut.abort();
  const resumed = await session.resume(before[0].id);
  const after = await readUntil(
    merge({ get: sseEvents(resumed.body) }),
    (seen) => seen.length === before.length - 1,
    "the replay",
  );
  const full = ({ id, message }) => ({ id, message });
  return { before: before.map(full), after: after.map(full) };
}

/** A 2026-07-28 (stateless) `codex` call's stream, cut mid-turn and resumed. */
async function resume2026(url) {
  const protocol = "2026-07-28";
  const cut = new AbortController();
  const response = await fetch(url, {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      "MCP-Protocol-Version": protocol,
      "Mcp-Method": "tools/call",
      "Mcp-Name": "codex",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 7,
      method: "tools/call",
      params: {
        name: "codex",
        arguments: { prompt: "talk", "approval-policy": "never" },
        _meta: {
          "io.modelcontextprotocol/protocolVersion": protocol,
          "io.modelcontextprotocol/clientCapabilities": {},
          "io.modelcontextprotocol/clientInfo": { name: "raw-2026", version: "0" },
        },
      },
    }),
    signal: cut.signal,
  });
  if (response.status !== 200) throw new Error(`tools/call: HTTP ${response.status}`);
  const deltas = (seen) => seen.filter((e) => e.kind === "codex/event:agent_message_delta").length;
  const before = await readUntil(
    merge({ post: sseEvents(response.body) }),
    (seen) => deltas(seen) >= 5,
    "five deltas",
  );
  cut.abort();
  const from = before.find((event) => event.kind.startsWith("codex/"));
  const resumed = await fetch(url, {
    method: "GET",
    headers: { Accept: "text/event-stream", "MCP-Protocol-Version": protocol, "Last-Event-ID": from.id },
  });
  if (resumed.status !== 200) throw new Error(`resume: HTTP ${resumed.status}`);
  const after = await readUntil(
    merge({ post: sseEvents(resumed.body) }),
    (seen) => seen.some((event) => event.message?.id === 7 && !event.message.method),
    "the call's result",
  );
  const result = after.at(-1).message;
  return {
    before: before.map(brief),
    after: after.map(brief),
    resumedFrom: { post: from.id },
    text: result.result?.content?.map((block) => block.text),
    isError: result.result?.isError ?? false,
  };
}

const scenarios = { resume, snapshot, resume2026 };
const [url, scenario] = process.argv.slice(2);
const run = scenarios[scenario];
if (!run) {
  console.error(`unknown scenario ${scenario}`);
  process.exit(2);
}
run(url).then(
  (seen) => {
    process.stdout.write(JSON.stringify(seen) + "\n");
    process.exit(0);
  },
  (err) => {
    console.error(err?.stack ?? String(err));
    process.exit(1);
  },
);
