// Two MCP TypeScript SDK clients on one listening `deputy mcp-server --listen` stream
// the same conversation (`conversationStream`); the first sends a message whose command
// needs approval. Both are asked; the first approves, the second leaves its question
// open and should see it withdrawn. A third request, without the token, is refused.
//
// Usage: node mcp_http_two_streams.mjs <http://…/mcp>
// Environment: DEPUTY_TEST_TOKEN, the server's bearer token.
// Prints one JSON object on stdout; exits non-zero on any failure.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

// Bound for waits the server should satisfy at once; a hang becomes a failure.
const WAIT_MS = 20_000;

function within(promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} within ${WAIT_MS} ms`)), WAIT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** One client: what it saw, and a promise of its turn's end. */
async function connect(url, name, answer) {
  const headers = { Authorization: `Bearer ${process.env.DEPUTY_TEST_TOKEN}` };
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const client = new Client({ name, version: "0" }, { capabilities: { elicitation: {} } });
  const seen = { eventTypes: [], questions: 0, withdrawn: false };
  let ended;
  const turnEnd = new Promise((resolve) => (ended = resolve));
  // A conversation stream's live events are notifications named by the event's type.
  client.fallbackNotificationHandler = async (notification) => {
    const type = notification.params?.msg?.type;
    if (type !== notification.method) return;
    seen.eventTypes.push(type);
    if (["task_complete", "turn_aborted", "error"].includes(type)) ended(type);
  };
  client.setRequestHandler(ElicitRequestSchema, (request, extra) => {
    seen.questions += 1;
    seen.message = request.params.message;
    if (answer) return { action: "accept", content: { decision: "approved" } };
    // Never answers: waits for the server to withdraw the question.
    return new Promise((resolve, reject) => {
      const late = setTimeout(() => resolve({ action: "decline" }), WAIT_MS);
      extra.signal.addEventListener("abort", () => {
        clearTimeout(late);
        seen.withdrawn = true;
        reject(new Error("withdrawn"));
      });
    });
  });
  await client.connect(transport);
  return { client, seen, turnEnd };
}

async function main(url) {
  const first = await connect(url, "first", true);
  const second = await connect(url, "second", false);
  const created = await first.client.callTool({
    name: "conversationCreate",
    arguments: { prompt: "", approval_policy: "untrusted", sandbox: "danger-full-access" },
  });
  const conversationId = created.structuredContent.conversation_id;
  for (const one of [first, second]) {
    const streamed = await one.client.callTool({
      name: "conversationStream",
      arguments: { conversation_id: conversationId },
    });
    if (streamed.isError) throw new Error(`conversationStream: ${JSON.stringify(streamed)}`);
  }
  await first.client.callTool({
    name: "conversationSendMessage",
    arguments: {
      conversation_id: conversationId,
      content: [{ type: "text", text: "run the command" }],
    },
  });
  const saw = () => JSON.stringify({ first: first.seen, second: second.seen });
  const ends = await Promise.all([
    within(first.turnEnd, "the first client did not see the turn end").catch((err) => {
      throw new Error(`${err.message}; seen: ${saw()}`);
    }),
    within(second.turnEnd, "the second client did not see the turn end").catch((err) => {
      throw new Error(`${err.message}; seen: ${saw()}`);
    }),
  ]);
  // A request without the token.
  const refused = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
  });
  const out = {
    ends,
    first: { ...first.seen, eventTypes: [...new Set(first.seen.eventTypes)].sort() },
    second: { ...second.seen, eventTypes: [...new Set(second.seen.eventTypes)].sort() },
    withoutToken: refused.status,
  };
  await first.client.close();
  await second.client.close();
  return out;
}

main(process.argv[2]).then(
  (seen) => console.log(JSON.stringify(seen)),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
