// Drives a listening `deputy mcp-server --listen` with the MCP TypeScript client 2.x
// (`@modelcontextprotocol/client`), which (with `versionNegotiation: auto`; its default is
// the legacy handshake) negotiates protocol 2026-07-28 through `server/discover` and fulfils `InputRequiredResult`s itself by calling its
// elicitation handler, then retries with `inputResponses` and the `requestState`.
//
// Usage: node mcp_client2_mrtr.mjs <http://…/mcp> <approve|decline>
// Prints one JSON object on stdout; exits non-zero on any failure.

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const CODEX_CALL = {
  name: "codex",
  arguments: {
    prompt: "run the command",
    "approval-policy": "untrusted",
    sandbox: "danger-full-access",
  },
};

async function main(url, scenario) {
  const client = new Client(
    { name: "deputy-ts2-test", version: "0" },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: "auto" } },
  );
  const questions = [];
  client.setRequestHandler("elicitation/create", async (request) => {
    const params = request.params ?? request;
    questions.push({ message: params.message, meta: params._meta ?? null });
    return scenario === "approve"
      ? { action: "accept", content: { decision: "approved" } }
      : { action: "decline" };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const seen = { scenario, protocolVersion: client.getNegotiatedProtocolVersion?.() ?? null };
  const result = await client.callTool(CODEX_CALL, { timeout: 30_000 });
  seen.isError = Boolean(result.isError);
  seen.text = result.content.filter((b) => b.type === "text").map((b) => b.text);
  seen.questions = questions;
  await client.close();
  return seen;
}

const [url, scenario] = process.argv.slice(2);
main(url, scenario).then(
  (seen) => console.log(JSON.stringify(seen)),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
