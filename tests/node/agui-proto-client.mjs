// Drives the official @ag-ui/client HttpAgent against a live thinkwire server
// over either HTTP binding: protobuf (`--transport proto`, the default) or
// JSON over SSE (`--transport sse`), so a test can compare what the client
// decoded from each for the same conversation.
//
//   node agui-proto-client.mjs URL [--transport proto|sse] [--turns N]
//        [--prompt TEXT]... [--forwarded JSON]... [--tools JSON]
//        [--tool-result TEXT] [--thread ID]
//
// The client asks for protobuf the way its own code allows: HttpAgent builds
// each request in `requestInit`, whose Accept is `text/event-stream`; a
// subclass replaces that Accept with @ag-ui/proto's media type. The client
// then picks its protobuf reader from the response's Content-Type (and its
// SSE reader for anything else), so the script also records what each
// response said it was.
//
// Turns are as in agui-client.mjs: each adds a user message (or, after a run
// that left tool calls pending and with --tool-result, a tool message per
// call) and calls runAgent; later turns send everything the client holds,
// sealed reasoning included. Turn i sends the i-th --forwarded (the last one
// given for the turns after it). Prints one JSON object on stdout:
//   { transport, messages: [...], runs: [{ accept, contentType, events: [...],
//     input: {...the RunAgentInput sent...}, newMessages, pendingToolCallIds }] }
// Any decoding, verification or schema error inside the client makes runAgent
// throw: the script prints it on stderr and exits with status 1.
import { HttpAgent } from "@ag-ui/client";
import { AGUI_MEDIA_TYPE } from "@ag-ui/proto";

class ProtoHttpAgent extends HttpAgent {
  requestInit(input) {
    const init = super.requestInit(input);
    return { ...init, headers: { ...init.headers, Accept: AGUI_MEDIA_TYPE } };
  }
}

function parseArgs(argv) {
  const args = {
    url: argv[0],
    transport: "proto",
    turns: 1,
    prompts: [],
    forwarded: [],
    tools: [],
    toolResult: null,
    thread: "node-thread-1",
  };
  for (let i = 1; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[++i];
    if (value === undefined) throw new Error(`missing value after ${flag}`);
    if (flag === "--transport") args.transport = value;
    else if (flag === "--turns") args.turns = Number(value);
    else if (flag === "--prompt") args.prompts.push(value);
    else if (flag === "--forwarded") args.forwarded.push(JSON.parse(value));
    else if (flag === "--thread") args.thread = value;
    else if (flag === "--tools") args.tools = JSON.parse(value);
    else if (flag === "--tool-result") args.toolResult = value;
    else throw new Error(`unknown flag ${flag}`);
  }
  if (!args.url) throw new Error("usage: agui-proto-client.mjs URL [--transport proto|sse] ...");
  if (!["proto", "sse"].includes(args.transport)) throw new Error(`unknown transport ${args.transport}`);
  return args;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  let exchange = null;
  const recordingFetch = async (url, init) => {
    const response = await fetch(url, init);
    exchange = {
      accept: init.headers.Accept,
      contentType: response.headers.get("content-type"),
      input: JSON.parse(init.body),
    };
    return response;
  };
  const Agent = args.transport === "proto" ? ProtoHttpAgent : HttpAgent;
  const agent = new Agent({ url: args.url, threadId: args.thread, fetch: recordingFetch });
  const runs = [];
  let pending = [];
  let prompt = 0;
  for (let turn = 0; turn < args.turns; turn++) {
    if (pending.length > 0 && args.toolResult !== null) {
      for (const toolCallId of pending) {
        agent.addMessage({ id: `tool-${toolCallId}`, role: "tool", toolCallId, content: args.toolResult });
      }
    } else {
      const content = args.prompts[prompt] ?? `Question number ${prompt + 1}?`;
      prompt++;
      agent.addMessage({ id: `user-${turn + 1}`, role: "user", content });
    }
    pending = [];
    const events = [];
    const result = await agent.runAgent(
      { forwardedProps: args.forwarded[Math.min(turn, args.forwarded.length - 1)] ?? {}, tools: args.tools },
      {
        onEvent: ({ event }) => {
          events.push(structuredClone(event));
        },
        onRunFinishedEvent: ({ pendingToolCallIds }) => {
          pending = pendingToolCallIds ?? [];
        },
      },
    );
    runs.push({ ...exchange, events, newMessages: result.newMessages, pendingToolCallIds: pending });
  }
  process.stdout.write(JSON.stringify({ transport: args.transport, messages: agent.messages, runs }) + "\n");
}

main().catch((err) => {
  process.stderr.write(`agui-proto-client failed: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
