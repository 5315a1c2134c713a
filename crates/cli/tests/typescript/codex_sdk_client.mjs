// Drives `deputy exec` with OpenAI's Codex TypeScript SDK (`@openai/codex-sdk`) as its
// users do, with `codexPathOverride` pointing at deputy, and prints what it saw.
//
// Usage: node codex_sdk_client.mjs <deputy binary> <scenario> [argument]
//   run:      `run()` of a task that runs a command and edits a file, with the thread
//             options a client sets (sandbox, approvals, reasoning effort, web search).
//   streamed: `runStreamed()` of the same; every event's type and item.
//   resume:   `run()`, then `resumeThread(id).run()` from a new `Codex`.
//   schema:   `run()` with `outputSchema`; the final answer parsed as JSON.
//   apikey:   `new Codex({ apiKey, baseUrl })` against the built-in OpenAI provider;
//             argument: the base URL.
//   abort:    `runStreamed()` with an AbortSignal fired once the command has started.
//   image:    `run()` of text and a `local_image`; argument: the image's path.
// Environment: DEPUTY_HOME and HOME, inherited by deputy through the SDK. The thread
// works in the current directory.
// Prints one JSON object on stdout; exits non-zero on any failure.

import { Codex } from "@openai/codex-sdk";

/** What every scenario's thread is started with, as a client sets it. */
function threadOptions() {
  return {
    workingDirectory: process.cwd(),
    skipGitRepoCheck: true,
    sandboxMode: "workspace-write",
    approvalPolicy: "never",
  };
}

async function main(deputy, scenario, argument) {
  const codex = new Codex({ codexPathOverride: deputy });
  const seen = { scenario };
  switch (scenario) {
    case "run": {
      const thread = codex.startThread({
        ...threadOptions(),
        approvalPolicy: "untrusted",
        modelReasoningEffort: "high",
        webSearchMode: "disabled",
        networkAccessEnabled: false,
        threadSource: "deputy-test",
      });
      const turn = await thread.run("make the notes");
      seen.threadId = thread.id;
      seen.finalResponse = turn.finalResponse;
      seen.items = turn.items;
      seen.usage = turn.usage;
      break;
    }
    case "streamed": {
      const thread = codex.startThread(threadOptions());
      const { events } = await thread.runStreamed("make the notes");
      seen.events = [];
      for await (const event of events) seen.events.push(event);
      seen.threadId = thread.id;
      break;
    }
    case "resume": {
      const first = codex.startThread(threadOptions());
      const one = await first.run("remember the number 7");
      const again = new Codex({ codexPathOverride: deputy }).resumeThread(
        first.id,
        threadOptions(),
      );
      const two = await again.run("which number?");
      seen.threadIds = [first.id, again.id];
      seen.answers = [one.finalResponse, two.finalResponse];
      break;
    }
    case "schema": {
      const thread = codex.startThread(threadOptions());
      const schema = {
        type: "object",
        properties: { summary: { type: "string" }, files: { type: "integer" } },
        required: ["summary", "files"],
        additionalProperties: false,
      };
      const turn = await thread.run("summarise", { outputSchema: schema });
      seen.parsed = JSON.parse(turn.finalResponse);
      break;
    }
    case "apikey": {
      const keyed = new Codex({
        codexPathOverride: deputy,
        apiKey: "sk-from-the-sdk",
        baseUrl: argument,
      });
      const turn = await keyed.startThread(threadOptions()).run("hello");
      seen.finalResponse = turn.finalResponse;
      break;
    }
    case "abort": {
      const controller = new AbortController();
      const thread = codex.startThread(threadOptions());
      const { events } = await thread.runStreamed("run the long command", {
        signal: controller.signal,
      });
      seen.events = [];
      try {
        for await (const event of events) {
          seen.events.push(event.type);
          if (event.type === "item.started" && event.item.type === "command_execution") {
            controller.abort();
          }
        }
        seen.outcome = "ended without an error";
      } catch (err) {
        seen.outcome = "threw";
        seen.errorName = err.name;
        seen.errorMessage = String(err.message);
      }
      break;
    }
    case "image": {
      const thread = codex.startThread(threadOptions());
      const turn = await thread.run([
        { type: "text", text: "what is in the picture?" },
        { type: "local_image", path: argument },
      ]);
      seen.finalResponse = turn.finalResponse;
      break;
    }
    default:
      throw new Error(`unknown scenario ${scenario}`);
  }
  return seen;
}

const [deputy, scenario, argument] = process.argv.slice(2);
if (!deputy || !scenario) {
  console.error("usage: codex_sdk_client.mjs <deputy binary> <scenario> [argument]");
  process.exit(2);
}
main(deputy, scenario, argument).then(
  (seen) => console.log(JSON.stringify(seen)),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
