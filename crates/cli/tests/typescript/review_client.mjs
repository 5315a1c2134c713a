// Calls deputy's `review` tool with the official MCP TypeScript SDK, which checks every
// result's `structuredContent` against the tool's `outputSchema`, and prints what it saw.
//
// Usage: node review_client.mjs <deputy binary>
//   lists the tools (so the SDK knows the output schema), reviews the uncommitted
//   changes, then asks for a review against a branch that does not exist.
// Environment: DEPUTY_HOME and HOME, passed on to the server explicitly (the SDK gives
// the server a filtered environment). The server runs in the current directory.
// Prints one JSON object on stdout; exits non-zero on any failure, a result the SDK
// finds invalid included.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

// Bound for each call; a hang becomes a failure.
const WAIT_MS = 20_000;

/** What a test needs of a tool result. */
function summary(result) {
  return {
    isError: Boolean(result.isError),
    text: result.content.filter((b) => b.type === "text").map((b) => b.text),
    structuredContent: result.structuredContent ?? null,
  };
}

async function main(deputy) {
  const transport = new StdioClientTransport({
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
  const client = new Client({ name: "deputy-ts-review-test", version: "0" });
  await client.connect(transport);
  const tools = await client.listTools();
  const review = tools.tools.find((tool) => tool.name === "review");
  const reviewed = await client.callTool(
    { name: "review", arguments: { target: "uncommitted" } },
    undefined,
    { timeout: WAIT_MS },
  );
  const failed = await client.callTool(
    { name: "review", arguments: { target: { base_branch: "no-such-branch" } } },
    undefined,
    { timeout: WAIT_MS },
  );
  await client.close();
  return {
    hasOutputSchema: Boolean(review?.outputSchema),
    reviewed: summary(reviewed),
    failed: summary(failed),
  };
}

const [deputy] = process.argv.slice(2);
if (!deputy) {
  console.error("usage: review_client.mjs <deputy binary>");
  process.exit(2);
}
main(deputy).then(
  (seen) => console.log(JSON.stringify(seen)),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
