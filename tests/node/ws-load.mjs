// Many WebSocket clients at once against a live thinkwire server, every
// run's events checked by the official @ag-ui/client verifier.
//
//   node --experimental-websocket ws-load.mjs WS_URL --prompts JSON
//        [--clients N] [--runs M] [--forwarded JSON] [--cancel CLIENT:RUN]
//
// Client i opens one socket and sends M runs one after another, each a
// fresh user message holding prompts[i % prompts.length]. With --cancel,
// that client's run sends a CANCEL_RUN frame as soon as its first text
// arrives. Each run's events go through @ag-ui/client's `verifyEvents`
// (any sequence or schema violation throws). Prints one JSON object:
//   { runs: [{ client, run, prompt, terminal, outcome, text, events }] }
// and exits 1 with the error on stderr if a socket fails or a run's events
// do not verify.
import { verifyEvents } from "@ag-ui/client";
import { from, lastValueFrom, toArray } from "rxjs";

function parseArgs(argv) {
  const args = { url: argv[0], clients: 8, runs: 3, prompts: [], forwarded: {}, cancel: null };
  for (let i = 1; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[++i];
    if (value === undefined) throw new Error(`missing value after ${flag}`);
    if (flag === "--clients") args.clients = Number(value);
    else if (flag === "--runs") args.runs = Number(value);
    else if (flag === "--prompts") args.prompts = JSON.parse(value);
    else if (flag === "--forwarded") args.forwarded = JSON.parse(value);
    else if (flag === "--cancel") args.cancel = value;
    else throw new Error(`unknown flag ${flag}`);
  }
  if (!args.url || args.prompts.length === 0) {
    throw new Error("usage: ws-load.mjs WS_URL --prompts JSON [--clients N] [--runs M]");
  }
  return args;
}

/// A socket whose incoming events can be awaited one run at a time.
async function open(url) {
  const ws = new WebSocket(url);
  const queue = [];
  let wake = null;
  let failure = null;
  ws.addEventListener("message", (msg) => {
    queue.push(JSON.parse(msg.data));
    if (wake) wake();
  });
  const fail = (what) => {
    failure = failure ?? new Error(what);
    if (wake) wake();
  };
  ws.addEventListener("error", () => fail("socket error"));
  ws.addEventListener("close", (e) => fail(`socket closed (${e.code})`));
  await new Promise((resolve, reject) => {
    ws.addEventListener("open", resolve, { once: true });
    ws.addEventListener("error", reject, { once: true });
  });
  const next = async () => {
    while (queue.length === 0) {
      if (failure) throw failure;
      await new Promise((resolve) => (wake = resolve));
      wake = null;
    }
    return queue.shift();
  };
  return { ws, next };
}

async function client(args, i) {
  const { ws, next } = await open(args.url);
  const results = [];
  for (let r = 0; r < args.runs; r++) {
    const prompt = i % args.prompts.length;
    const runId = `load-${i}-${r}`;
    ws.send(
      JSON.stringify({
        threadId: `load-thread-${i}`,
        runId,
        state: {},
        messages: [{ id: `user-${i}-${r}`, role: "user", content: args.prompts[prompt] }],
        tools: [],
        context: [],
        forwardedProps: args.forwarded,
      }),
    );
    const cancel = args.cancel === `${i}:${r}`;
    let cancelled = false;
    const events = [];
    let text = "";
    for (;;) {
      const event = await next();
      events.push(event);
      if (event.type === "TEXT_MESSAGE_CONTENT") {
        text += event.delta;
        if (cancel && !cancelled) {
          cancelled = true;
          ws.send(JSON.stringify({ type: "CANCEL_RUN", runId }));
        }
      }
      if (event.type === "RUN_FINISHED" || event.type === "RUN_ERROR") break;
    }
    await lastValueFrom(from(events).pipe(verifyEvents(), toArray()));
    const last = events[events.length - 1];
    results.push({
      client: i,
      run: r,
      prompt,
      terminal: last.type,
      outcome: last.outcome?.type ?? null,
      code: last.code ?? null,
      text,
      events: events.length,
    });
  }
  ws.close();
  return results;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const all = await Promise.all(Array.from({ length: args.clients }, (_, i) => client(args, i)));
  process.stdout.write(JSON.stringify({ runs: all.flat() }) + "\n");
}

main().catch((err) => {
  process.stderr.write(`ws-load failed: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
