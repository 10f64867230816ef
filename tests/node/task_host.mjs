// A real host that follows tasks, for tests/program/test_task_clients.py: the tasks extension's
// own client library (@modelcontextprotocol/ext-tasks) over the TypeScript client 2.x, in either
// era (2026-07-28 with the extension: "ext-tasks"; 2025-11-25's tasks: "ext-tasks-2025"), or the
// TypeScript SDK 1.x client's own 2025-11-25 task stream ("sdk1").
//
// One argument, JSON: {modules, command, args, env, cwd, host, calls: [{name, arguments, cancel}]}.
// It makes each call in turn and prints one JSON line per event on stdout:
//   {"event":"task","index":i,"taskId":...}        the call became a task (the test decides it)
//   {"event":"outcome","index":i,"status":...,"result":...,"error":...,"messages":[...]}
//   {"event":"done"}
// "messages": every statusMessage the host was shown for that task. A call with "cancel"
// cancels its task as soon as it is created. Nothing is retried: whatever the library refuses
// (a result that fails its schema) is the outcome's "error".

import { realpathSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const plan = JSON.parse(process.argv[2]);
const modules = realpathSync(plan.modules);
const load = (path) => import(pathToFileURL(join(modules, path)).href);
const say = (event) => process.stdout.write(`${JSON.stringify(event)}\n`);
const CLIENT_INFO = { name: "task-host", version: "1" };
const MODERN = "2026-07-28";

function errorText(error) {
  if (error === undefined || error === null) return null;
  const causes = [];
  for (let e = error; e !== undefined && e !== null && causes.length < 4; e = e.cause) {
    causes.push(e instanceof Error ? e.message : String(e));
  }
  return causes.join(" <- ");
}

// The ext-tasks client needs the raw request path for 2026-07-28 tasks (its README's
// "rawDispatch"): requests the SDK does not track, answered before the SDK sees them.
class RawWire {
  constructor(inner) {
    this.inner = inner;
    this.waiting = new Map();
    this.next = 1;
    inner.onmessage = (message, extra) => {
      const answer = this.waiting.get(message.id);
      if (answer !== undefined && !("method" in message)) {
        this.waiting.delete(message.id);
        answer(message);
        return;
      }
      this.onmessage?.(message, extra);
    };
    inner.onclose = () => this.onclose?.();
    inner.onerror = (error) => this.onerror?.(error);
  }
  start() { return this.inner.start(); }
  send(message, options) { return this.inner.send(message, options); }
  close() { return this.inner.close(); }
  setProtocolVersion(version) { this.inner.setProtocolVersion?.(version); }
  dispatch = async (request) => {
    const id = `raw-${this.next++}`;
    const answered = new Promise((resolve) => this.waiting.set(id, resolve));
    await this.inner.send({ jsonrpc: "2.0", id, ...request });
    const message = await answered;
    return "error" in message ? { kind: "error", error: message.error } : { kind: "result", result: message.result };
  };
}

async function extTasksHost(era) {
  const { Client } = await load("@modelcontextprotocol/client/dist/index.mjs");
  const { StdioClientTransport } = await load("@modelcontextprotocol/client/dist/stdio.mjs");
  const ext = await load("@modelcontextprotocol/ext-tasks/dist/client/index.js");
  const wire = new RawWire(new StdioClientTransport({
    command: plan.command, args: plan.args, env: plan.env, cwd: plan.cwd, stderr: "inherit",
  }));
  const modern = era === "modern";
  const client = new Client(CLIENT_INFO, {
    capabilities: {}, ...(modern ? { versionNegotiation: { mode: { pin: MODERN } } } : {}),
  });
  await client.connect(wire);
  const session = ext.createTaskSessionFromClient(client, {
    endpointId: await ext.createTaskSessionEndpointId("agentrt-proxy-tests", plan.args),
    ...(modern ? {
      rawDispatch: wire.dispatch,
      v2RequestFraming: { protocolVersion: MODERN, clientInfo: CLIENT_INFO, clientCapabilities: {} },
    } : {}),
  });
  try {
    for (const [index, call] of plan.calls.entries()) {
      const messages = [];
      const outcome = { event: "outcome", index, status: null, result: null, error: null, messages };
      try {
        const execution = await session.callTool(call.name, call.arguments, { task: { preference: "prefer" } });
        if (execution.kind === "task") {
          say({ event: "task", index, taskId: execution.handle.taskId });
          if (call.cancel) await execution.cancel();
        }
        const { outcome: settled } = await execution.settle({
          onEvent: (event) => {
            const view = ext.taskViewFromExecutionEvent(event);
            if (view?.statusMessage !== undefined) messages.push(view.statusMessage);
          },
        });
        outcome.status = settled.status;
        if (settled.status === "completed") outcome.result = settled.result;
        if (settled.status === "failed") outcome.error = errorText(settled.error);
      } catch (error) {
        outcome.error = errorText(error);
      }
      say(outcome);
    }
  } finally {
    await session.close();
    await client.close();
  }
}

async function sdk1Host() {
  const { Client } = await load("@modelcontextprotocol/sdk/dist/esm/client/index.js");
  const { StdioClientTransport } = await load("@modelcontextprotocol/sdk/dist/esm/client/stdio.js");
  const { CallToolResultSchema } = await load("@modelcontextprotocol/sdk/dist/esm/types.js");
  const client = new Client(CLIENT_INFO, { capabilities: {} });
  await client.connect(new StdioClientTransport({
    command: plan.command, args: plan.args, env: plan.env, cwd: plan.cwd, stderr: "inherit",
  }));
  try {
    for (const [index, call] of plan.calls.entries()) {
      const messages = [];
      const outcome = { event: "outcome", index, status: null, result: null, error: null, messages };
      const stream = client.experimental.tasks.callToolStream(
        { name: call.name, arguments: call.arguments }, CallToolResultSchema, { task: { ttl: 60000 } });
      for await (const message of stream) {
        if (message.type === "taskCreated") {
          say({ event: "task", index, taskId: message.task.taskId });
          if (call.cancel) await client.experimental.tasks.cancelTask(message.task.taskId);
        } else if (message.type === "taskStatus") {
          if (message.task.statusMessage !== undefined) messages.push(message.task.statusMessage);
          outcome.status = message.task.status;
        } else if (message.type === "result") {
          outcome.result = message.result;
        } else if (message.type === "error") {
          outcome.error = errorText(message.error);
        }
      }
      say(outcome);
    }
  } finally {
    await client.close();
  }
}

const hosts = { "ext-tasks": () => extTasksHost("modern"), "ext-tasks-2025": () => extTasksHost("2025-11-25"), sdk1: sdk1Host };
try {
  await hosts[plan.host]();
  say({ event: "done" });
} catch (error) {
  say({ event: "failed", error: errorText(error) });
  process.exitCode = 1;
}
