// An ACP client on the official TypeScript SDK (@agentclientprotocol/sdk, its v1 client
// API): spawns the agent named by a plan, runs the plan's steps and prints what it saw
// as one JSON object on stdout.
//
// Usage: node acp_client.mjs PLAN.json
//
// The plan: {agent: {command, args, env}, cwd, permissions: [answer...], steps: [step...]}.
// Steps:
//   {op: "initialize", elicitations?}              with elicitations (a list of answers, used
//       in order: {action, content?}), announces that it fills in forms and answers them
//   {op: "new", mcpServers?}                       session/new in `cwd`; becomes the current session
//   {op: "load", sessionId, mcpServers?}            session/load; becomes the current session
//   {op: "prompt", text? | blocks?, cancelWhenFile?} session/prompt on the current session;
//       with cancelWhenFile, session/cancel is sent once that file exists
//   {op: "setMode", modeId} / {op: "setModel", value}
//   {op: "request", method, params}                 any request, as is ("$session" is replaced
//       by the current session id)
//   {op: "promptTwice", text}                       two prompts at once on the current session
// Permission answers, used in order: "allow_once", "allow_always", "reject_once" (the
// offered option of that kind), "cancelled" (the cancelled outcome), "cancel_prompt" (session/cancel, then the
// cancelled outcome once the agent withdraws the question or at once).
//
// Output: {steps: [{op, result?, error?, updates: [...], permissions: [...],
//   elicitations: [{answer, request}...]}], stderr}

import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";

import { client, methods, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk";

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
const child = spawn(plan.agent.command, plan.agent.args ?? [], {
  cwd: plan.cwd,
  env: { ...process.env, ...(plan.agent.env ?? {}) },
  stdio: ["pipe", "pipe", "pipe"],
});
let stderr = "";
child.stderr.on("data", (chunk) => {
  stderr += chunk.toString();
});

const updates = [];
const permissions = [];
const answers = [...(plan.permissions ?? [])];
const elicitations = [];
let formAnswers = null;
let current = null;
let ctxRef = null;

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function waitForFile(path, deadlineMs = 30000) {
  const end = Date.now() + deadlineMs;
  while (!existsSync(path)) {
    if (Date.now() > end) throw new Error(`${path} never appeared`);
    await sleep(20);
  }
}

function errorOf(err) {
  return { code: err.code, message: err.message, data: err.data ?? null };
}

const app = client({ name: "deputy-acp-test" })
  .onNotification(methods.client.session.update, ({ params }) => {
    updates.push(params);
  })
  .onRequest(methods.client.session.requestPermission, async ({ params, signal }) => {
    const answer = answers.shift() ?? "reject_once";
    const seen = { answer, request: params, withdrawn: false };
    permissions.push(seen);
    if (answer === "cancel_prompt") {
      await ctxRef.notify(methods.agent.session.cancel, { sessionId: params.sessionId });
      // The agent withdraws the question ($/cancel_request) once the turn is stopped.
      await new Promise((resolve) => {
        if (signal.aborted) return resolve();
        signal.addEventListener("abort", () => resolve(), { once: true });
        setTimeout(resolve, 10000);
      });
      seen.withdrawn = signal.aborted;
      return { outcome: { outcome: "cancelled" } };
    }
    if (answer === "cancelled") {
      return { outcome: { outcome: "cancelled" } };
    }
    // Chosen by kind, as an editor's buttons are: option ids are the agent's own.
    const option = params.options.find((o) => o.kind === answer);
    if (!option) return { outcome: { outcome: "cancelled" } };
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  })
  .onRequest(methods.client.elicitation.create, async ({ params }) => {
    const answer = formAnswers?.shift() ?? { action: "decline" };
    elicitations.push({ answer, request: params });
    return answer;
  });

function substitute(value) {
  return JSON.parse(JSON.stringify(value).replaceAll('"$session"', JSON.stringify(current)));
}

async function runStep(ctx, step) {
  switch (step.op) {
    case "initialize": {
      const clientCapabilities = {
        fs: { readTextFile: false, writeTextFile: false },
        terminal: false,
      };
      if (step.elicitations) {
        formAnswers = [...step.elicitations];
        clientCapabilities.elicitation = { form: {} };
      }
      return ctx.request(methods.agent.initialize, {
        protocolVersion: PROTOCOL_VERSION,
        clientCapabilities,
        clientInfo: { name: "deputy-acp-test", version: "1.0.0" },
      });
    }
    case "new": {
      const result = await ctx.request(methods.agent.session.new, {
        cwd: plan.cwd,
        mcpServers: step.mcpServers ?? [],
      });
      current = result.sessionId;
      return result;
    }
    case "load": {
      const result = await ctx.request(methods.agent.session.load, {
        sessionId: step.sessionId,
        cwd: plan.cwd,
        mcpServers: step.mcpServers ?? [],
      });
      current = step.sessionId;
      return result;
    }
    case "prompt": {
      const prompt = step.blocks ?? [{ type: "text", text: step.text }];
      const pending = ctx.request(methods.agent.session.prompt, { sessionId: current, prompt });
      if (step.cancelWhenFile) {
        await waitForFile(step.cancelWhenFile);
        await ctx.notify(methods.agent.session.cancel, { sessionId: current });
      }
      return pending;
    }
    case "promptTwice": {
      const prompt = [{ type: "text", text: step.text }];
      const first = ctx.request(methods.agent.session.prompt, { sessionId: current, prompt });
      const second = ctx.request(methods.agent.session.prompt, { sessionId: current, prompt });
      const settle = (p) =>
        p.then(
          (result) => ({ result }),
          (err) => ({ error: errorOf(err) }),
        );
      const [a, b] = await Promise.all([settle(first), settle(second)]);
      return { first: a, second: b };
    }
    case "setMode":
      return ctx.request(methods.agent.session.setMode, { sessionId: current, modeId: step.modeId });
    case "setModel":
      return ctx.request(methods.agent.session.setConfigOption, {
        sessionId: current,
        configId: "model",
        value: step.value,
      });
    case "request":
      return ctx.request(step.method, substitute(step.params));
    default:
      throw new Error(`unknown step ${step.op}`);
  }
}

const seen = [];
try {
  await app.connectWith(
    ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)),
    async (ctx) => {
      ctxRef = ctx;
      for (const step of plan.steps) {
        const from = {
          updates: updates.length,
          permissions: permissions.length,
          elicitations: elicitations.length,
        };
        const record = { op: step.op };
        try {
          record.result = await runStep(ctx, step);
        } catch (err) {
          record.error = errorOf(err);
        }
        record.updates = updates.slice(from.updates);
        record.permissions = permissions.slice(from.permissions);
        record.elicitations = elicitations.slice(from.elicitations);
        seen.push(record);
      }
    },
  );
} catch (err) {
  seen.push({ op: "connection", error: String(err?.stack ?? err) });
}
child.stdin.end();
const exited = await Promise.race([
  new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal }))),
  sleep(10000).then(() => null),
]);
if (exited === null) child.kill("SIGKILL");
process.stdout.write(JSON.stringify({ steps: seen, exit: exited, stderr }) + "\n");
