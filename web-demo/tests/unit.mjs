// Unit tests of the page's non-UI modules, in Node (no browser, no server):
// the WebSocketAgent against a scripted fake socket, running the official
// @ag-ui/client pipeline (verify + apply), and the frontend tools.
//
//   node tests/unit.mjs        (npm run test:unit)
import { build } from "esbuild";
import { mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { test } from "node:test";
import assert from "node:assert/strict";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..");
// Compiled next to node_modules so the bare imports (@ag-ui/client, rxjs) resolve.
const out = join(root, "node_modules", ".cache", "unit");
await mkdir(out, { recursive: true });
await build({
  entryPoints: { "ws-agent": join(root, "src/ws-agent.ts"), tools: join(root, "src/tools.ts") },
  outdir: out,
  bundle: true,
  packages: "external",
  format: "esm",
  platform: "node",
  outExtension: { ".js": ".mjs" },
  logLevel: "warning",
});
const { WebSocketAgent, ConnectionLostError } = await import(pathToFileURL(join(out, "ws-agent.mjs")).href);
const { evaluate, executeTool, FRONTEND_TOOLS } = await import(pathToFileURL(join(out, "tools.mjs")).href);

process.env.SUPPRESS_TRANSFORMATION_WARNINGS = "true";
// AbstractAgent logs every failed run; the failures here are on purpose.
const consoleError = console.error;
console.error = (...args) => {
  if (typeof args[0] === "string" && args[0].startsWith("Agent execution failed")) return;
  consoleError(...args);
};
const tick = (ms = 0) => new Promise((resolve) => setTimeout(resolve, ms));

/** A scripted stand-in for the browser's WebSocket; tests play the server. */
class FakeSocket {
  static instances = [];
  static autoOpen = true;
  constructor(url) {
    this.url = url;
    this.readyState = 0;
    this.sent = [];
    this.closedWith = null;
    FakeSocket.instances.push(this);
    if (FakeSocket.autoOpen) setTimeout(() => this.serverOpen(), 0);
  }
  send(data) {
    assert.equal(this.readyState, 1, "send on a socket that is not open");
    this.sent.push(JSON.parse(data));
  }
  close(code = 1000, reason = "") {
    this.closedWith = { code, reason };
    this.serverClose(code, reason);
  }
  // --- the server's side ---
  serverOpen() {
    if (this.readyState !== 0) return;
    this.readyState = 1;
    this.onopen?.({});
  }
  emit(...events) {
    for (const e of events) this.onmessage?.({ data: typeof e === "string" ? e : JSON.stringify(e) });
  }
  serverClose(code = 1006, reason = "") {
    if (this.readyState === 3) return;
    this.readyState = 3;
    this.onclose?.({ code, reason });
  }
  static last() {
    return FakeSocket.instances[FakeSocket.instances.length - 1];
  }
}

function newAgent(extra = {}) {
  FakeSocket.instances = [];
  FakeSocket.autoOpen = true;
  return new WebSocketAgent({
    url: "ws://test/agent/ws",
    threadId: "t1",
    WebSocket: FakeSocket,
    reconnect: { initialDelayMs: 5, maxDelayMs: 20, jitter: 0 },
    ...extra,
  });
}

/** Waits until the agent's socket received a RunAgentInput and returns it. */
async function nextInput(socket, count) {
  for (let i = 0; i < 200; i++) {
    const inputs = socket.sent.filter((f) => Array.isArray(f.messages));
    if (inputs.length >= count) return inputs[count - 1];
    await tick(1);
  }
  throw new Error("no RunAgentInput was sent");
}

function reasoningTurn(input, { rid, mid, sealed, text }) {
  return [
    { type: "RUN_STARTED", threadId: input.threadId, runId: input.runId },
    { type: "REASONING_START", messageId: rid },
    { type: "REASONING_MESSAGE_START", messageId: rid, role: "reasoning" },
    { type: "REASONING_MESSAGE_CONTENT", messageId: rid, delta: "thinking" },
    { type: "REASONING_MESSAGE_END", messageId: rid },
    { type: "REASONING_ENCRYPTED_VALUE", subtype: "message", entityId: rid, encryptedValue: sealed },
    { type: "REASONING_END", messageId: rid },
    { type: "TEXT_MESSAGE_START", messageId: mid, role: "assistant" },
    { type: "TEXT_MESSAGE_CONTENT", messageId: mid, delta: text },
    { type: "TEXT_MESSAGE_END", messageId: mid },
    { type: "RUN_FINISHED", threadId: input.threadId, runId: input.runId },
  ];
}

test("two runs on one socket; the second replays the sealed reasoning", async () => {
  const agent = newAgent();
  agent.addMessage({ id: "u1", role: "user", content: "hi" });
  const first = agent.runAgent({ forwardedProps: { reasoning: { visibility: "full" } } });
  const socket = await (async () => {
    await tick(5);
    return FakeSocket.last();
  })();
  const input1 = await nextInput(socket, 1);
  assert.equal(input1.threadId, "t1");
  assert.deepEqual(input1.forwardedProps, { reasoning: { visibility: "full" } });
  socket.emit(...reasoningTurn(input1, { rid: "r1", mid: "m1", sealed: "SEALED-1", text: "Hello!" }));
  const result = await first;
  assert.deepEqual(
    result.newMessages.map((m) => m.role),
    ["reasoning", "assistant"],
  );
  const reasoning = agent.messages.find((m) => m.id === "r1");
  assert.equal(reasoning.encryptedValue, "SEALED-1");
  assert.equal(reasoning.content, "thinking");

  agent.addMessage({ id: "u2", role: "user", content: "again" });
  const second = agent.runAgent();
  const input2 = await nextInput(socket, 2);
  assert.equal(FakeSocket.instances.length, 1, "the second run reuses the socket");
  const replayed = input2.messages.find((m) => m.id === "r1");
  assert.equal(replayed.role, "reasoning");
  assert.equal(replayed.encryptedValue, "SEALED-1");
  socket.emit(...reasoningTurn(input2, { rid: "r2", mid: "m2", sealed: "SEALED-2", text: "Again!" }));
  await second;
  assert.equal(agent.messages.filter((m) => m.role === "assistant").length, 2);
  agent.close();
});

test("abortRun sends CANCEL_RUN and the run ends as cancelled, without error", async () => {
  const agent = newAgent();
  agent.addMessage({ id: "u1", role: "user", content: "long" });
  let outcome = null;
  let failed = null;
  const done = agent.runAgent({}, {
    onRunFinishedEvent: (p) => {
      outcome = p.outcome;
    },
    onRunFailed: ({ error }) => {
      failed = error;
    },
  });
  await tick(5);
  const socket = FakeSocket.last();
  const input = await nextInput(socket, 1);
  socket.emit(
    { type: "RUN_STARTED", threadId: "t1", runId: input.runId },
    { type: "TEXT_MESSAGE_START", messageId: "m1", role: "assistant" },
    { type: "TEXT_MESSAGE_CONTENT", messageId: "m1", delta: "Once upon" },
  );
  await tick(1);
  agent.abortRun();
  const cancel = socket.sent.find((f) => f.type === "CANCEL_RUN");
  assert.deepEqual(cancel, { type: "CANCEL_RUN", runId: input.runId });
  socket.emit(
    { type: "TEXT_MESSAGE_END", messageId: "m1" },
    { type: "RUN_FINISHED", threadId: "t1", runId: input.runId, outcome: { type: "cancelled" } },
  );
  await done;
  assert.equal(outcome, "cancelled");
  assert.equal(failed, null);
  assert.equal(agent.messages.find((m) => m.id === "m1").content, "Once upon");
  agent.close();
});

test("a cancel the server never confirms ends quietly and replaces the socket", async () => {
  const agent = newAgent({ cancelTimeoutMs: 20 });
  agent.addMessage({ id: "u1", role: "user", content: "x" });
  const done = agent.runAgent();
  await tick(5);
  const socket = FakeSocket.last();
  const input = await nextInput(socket, 1);
  socket.emit({ type: "RUN_STARTED", threadId: "t1", runId: input.runId });
  agent.abortRun();
  await done; // AbortError is swallowed by AbstractAgent: no rejection
  assert.equal(socket.closedWith?.code, 4000);
  await tick(40);
  assert.equal(FakeSocket.instances.length, 2, "a fresh socket was opened");
  assert.equal(agent.connection.state, "open");
  agent.close();
});

test("a socket drop fails the run with ConnectionLostError, then reconnects with backoff", async () => {
  const agent = newAgent();
  const states = [];
  agent.onConnectionChange((s) => states.push(s.state));
  agent.addMessage({ id: "u1", role: "user", content: "x" });
  const done = agent.runAgent();
  await tick(5);
  const socket = FakeSocket.last();
  const input = await nextInput(socket, 1);
  socket.emit({ type: "RUN_STARTED", threadId: "t1", runId: input.runId });
  socket.serverClose(1006, "");
  await assert.rejects(done, (error) => error instanceof ConnectionLostError && error.code === 1006);
  assert.equal(agent.connection.state, "reconnecting");
  await tick(30);
  assert.equal(agent.connection.state, "open");
  assert.deepEqual(states.slice(0, 5), ["idle", "connecting", "open", "reconnecting", "connecting"]);
  // The next run goes out on the new socket.
  const next = agent.runAgent();
  const socket2 = FakeSocket.last();
  assert.notEqual(socket2, socket);
  const input2 = await nextInput(socket2, 1);
  socket2.emit(
    { type: "RUN_STARTED", threadId: "t1", runId: input2.runId },
    { type: "RUN_FINISHED", threadId: "t1", runId: input2.runId },
  );
  await next;
  agent.close();
});

test("a socket drop mid-run resumes on the next socket, with nothing repeated or missing", async () => {
  const agent = newAgent();
  agent.addMessage({ id: "u1", role: "user", content: "x" });
  const done = agent.runAgent();
  await tick(5);
  const socket = FakeSocket.last();
  const input = await nextInput(socket, 1);
  const events = reasoningTurn(input, { rid: "r1", mid: "m1", sealed: "SEALED", text: "answer" });
  events.splice(4, 0, { type: "REASONING_MESSAGE_CONTENT", messageId: "r1", delta: " more" });
  const framed = events.map((e, i) => ({ ...e, seq: i + 1 }));
  framed[0].resume = { id: "rs-1", url: "/agent/runs/rs-1", token: "tok", windowSecs: 30 };
  socket.emit(...framed.slice(0, 4));
  socket.serverClose(1006, "");
  // Waits for the new socket's first frame (the backoff is 5 ms; a busy machine may take longer).
  for (let i = 0; i < 500 && !(FakeSocket.last() !== socket && FakeSocket.last().sent.length > 0); i++) await tick(2);
  const socket2 = FakeSocket.last();
  assert.notEqual(socket2, socket);
  assert.deepEqual(socket2.sent[0], { type: "RESUME_RUN", resumeId: "rs-1", token: "tok", lastSeq: 4 });
  // The server may send again what the client already had: it is dropped.
  socket2.emit(...framed.slice(2));
  await done;
  const reasoning = agent.messages.find((m) => m.role === "reasoning");
  assert.equal(reasoning.content, "thinking more");
  assert.equal(reasoning.encryptedValue, "SEALED");
  assert.equal(agent.messages.find((m) => m.role === "assistant").content, "answer");
  agent.close();
});

test("a run taken over by another connection (close 4001) is not resumed", async () => {
  const agent = newAgent();
  agent.addMessage({ id: "u1", role: "user", content: "x" });
  const done = agent.runAgent();
  await tick(5);
  const socket = FakeSocket.last();
  const input = await nextInput(socket, 1);
  const grant = { id: "rs-1", url: "/agent/runs/rs-1", token: "tok", windowSecs: 30 };
  socket.emit({ type: "RUN_STARTED", threadId: "t1", runId: input.runId, seq: 1, resume: grant });
  socket.serverClose(4001, "run resumed on another connection");
  await assert.rejects(done, (error) => error instanceof ConnectionLostError && error.code === 4001);
  agent.close();
});

test("backoff grows while the server stays down, and a run waits for the socket", async () => {
  const agent = newAgent({ reconnect: { initialDelayMs: 5, maxDelayMs: 15, factor: 2, jitter: 0 } });
  FakeSocket.autoOpen = false;
  agent.openConnection();
  const delays = [];
  agent.onConnectionChange((s) => {
    if (s.state === "reconnecting") delays.push(s.retryAt - Date.now());
  });
  for (let i = 0; i < 4; i++) {
    FakeSocket.last().serverClose(1006);
    await tick(25);
  }
  assert.ok(delays.length >= 3, `backoff happened (${delays})`);
  assert.ok(delays[1] > delays[0] && delays[2] > delays[1], `delays grow: ${delays}`);
  assert.ok(Math.max(...delays) <= 15, `delays are capped: ${delays}`);
  // A run issued while the socket is down goes out once it opens.
  agent.addMessage({ id: "u1", role: "user", content: "x" });
  const done = agent.runAgent();
  await tick(1);
  const socket = FakeSocket.last();
  socket.serverOpen();
  const input = await nextInput(socket, 1);
  socket.emit(
    { type: "RUN_STARTED", threadId: "t1", runId: input.runId },
    { type: "RUN_FINISHED", threadId: "t1", runId: input.runId },
  );
  await done;
  agent.close();
});

test("RUN_ERROR ends the run and reaches subscribers; the socket stays usable", async () => {
  const agent = newAgent();
  agent.addMessage({ id: "u1", role: "user", content: "x" });
  let seen = null;
  const done = agent.runAgent({}, {
    onRunErrorEvent: ({ event }) => {
      seen = event;
    },
  });
  await tick(5);
  const socket = FakeSocket.last();
  await nextInput(socket, 1);
  socket.emit({ type: "RUN_ERROR", message: "input too long", code: "INPUT_TOO_LARGE" });
  await done.catch(() => {});
  assert.equal(seen?.code, "INPUT_TOO_LARGE");
  const next = agent.runAgent();
  const input2 = await nextInput(socket, 2);
  socket.emit(
    { type: "RUN_STARTED", threadId: "t1", runId: input2.runId },
    { type: "RUN_FINISHED", threadId: "t1", runId: input2.runId },
  );
  await next;
  agent.close();
});

test("a frame that is not JSON fails the run with a framing error", async () => {
  const agent = newAgent();
  agent.addMessage({ id: "u1", role: "user", content: "x" });
  const done = agent.runAgent();
  await tick(5);
  const socket = FakeSocket.last();
  await nextInput(socket, 1);
  socket.emit("data: {not an event}");
  await assert.rejects(done, (error) => error.name === "FramingError");
  agent.close();
});

test("sequence violations are caught by the official verifier", async () => {
  const agent = newAgent();
  agent.addMessage({ id: "u1", role: "user", content: "x" });
  const done = agent.runAgent();
  await tick(5);
  const socket = FakeSocket.last();
  const input = await nextInput(socket, 1);
  // Content for a message that was never started.
  socket.emit(
    { type: "RUN_STARTED", threadId: "t1", runId: input.runId },
    { type: "TEXT_MESSAGE_CONTENT", messageId: "nope", delta: "x" },
  );
  await assert.rejects(done);
  agent.close();
});

test("calculator: precedence, associativity, errors", () => {
  assert.equal(evaluate("1 + 2 * 3"), 7);
  assert.equal(evaluate("(1 + 2) * 3"), 9);
  assert.equal(evaluate("2 ^ 3 ^ 2"), 512);
  assert.equal(evaluate("-2 ^ 2"), 4);
  assert.equal(evaluate("10 % 4 - 1.5e1 / 3"), -3);
  assert.equal(evaluate("17*23"), 391);
  assert.throws(() => evaluate("1 / 0"), /division by zero/);
  assert.throws(() => evaluate("2 +"), /unexpected end/);
  assert.throws(() => evaluate("alert(1)"), /unexpected 'a'/);
  assert.throws(() => evaluate("(1"), /expected '\)'/);
  assert.throws(() => evaluate("1 2"), /unexpected '2'/);
  assert.throws(() => evaluate("(".repeat(60) + "1" + ")".repeat(60)), /nested/);
});

test("tools: offered with JSON Schema parameters, executed from streamed JSON arguments", () => {
  assert.deepEqual(FRONTEND_TOOLS.map((t) => t.name), ["get_current_time", "calculate"]);
  const calc = executeTool("calculate", '{"expression":"6*7"}');
  assert.deepEqual(JSON.parse(calc.content), { expression: "6*7", result: 42 });
  assert.equal(calc.error, undefined);
  const now = new Date("2025-01-02T03:04:05Z");
  const time = JSON.parse(executeTool("get_current_time", '{"timeZone":"UTC"}', now).content);
  assert.equal(time.iso, "2025-01-02T03:04:05.000Z");
  assert.equal(time.timeZone, "UTC");
  assert.match(executeTool("get_current_time", "", now).content, /2025-01-02T03:04:05/);
  assert.ok(executeTool("get_current_time", '{"timeZone":"Not/AZone"}').error);
  assert.ok(executeTool("calculate", "{bad json").error);
  assert.ok(executeTool("calculate", "[1]").error);
  assert.ok(executeTool("rm_rf", "{}").error);
});
