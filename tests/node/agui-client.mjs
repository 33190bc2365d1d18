// Drives the official @ag-ui/client HttpAgent against a live thinkwire server.
//
//   node agui-client.mjs URL [--turns N] [--prompt TEXT] [--forwarded JSON]
//                            [--tools JSON] [--tool-result TEXT] [--context JSON]
//
// Runs N turns in one thread (each adds a user message and calls runAgent, so
// the second turn replays the first turn's messages, sealed reasoning
// included). `--tools` offers a JSON array of AG-UI tools on every run, and
// `--context` a JSON array of AG-UI context entries ({description, value}). With
// `--tool-result`, a turn that follows a run which left tool calls pending
// answers each of them with a `tool` message holding TEXT instead of adding a
// user message, as a frontend that executes tools does. Then it prints one
// JSON object on stdout:
//   { messages: [...the agent's final messages...], events: ["RUN_STARTED", ...],
//     runs: [{ newMessages: [...] }] }
// Any verification or schema error inside the client makes runAgent throw:
// the script then prints the error on stderr and exits with status 1.
import { HttpAgent } from "@ag-ui/client";

function parseArgs(argv) {
  const args = { url: argv[0], turns: 1, prompts: [], forwarded: {}, tools: [], context: [], toolResult: null };
  for (let i = 1; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[++i];
    if (value === undefined) throw new Error(`missing value after ${flag}`);
    if (flag === "--turns") args.turns = Number(value);
    else if (flag === "--prompt") args.prompts.push(value);
    else if (flag === "--forwarded") args.forwarded = JSON.parse(value);
    else if (flag === "--thread") args.thread = value;
    else if (flag === "--tools") args.tools = JSON.parse(value);
    else if (flag === "--context") args.context = JSON.parse(value);
    else if (flag === "--tool-result") args.toolResult = value;
    else throw new Error(`unknown flag ${flag}`);
  }
  if (!args.url) throw new Error("usage: agui-client.mjs URL [--turns N] [--prompt TEXT]...");
  return args;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const agent = new HttpAgent({ url: args.url, threadId: args.thread ?? "node-thread-1" });
  const events = [];
  const subscriber = {
    onEvent: ({ event }) => {
      events.push(event.type);
    },
  };
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
    const result = await agent.runAgent(
      { forwardedProps: args.forwarded, tools: args.tools, context: args.context },
      {
        ...subscriber,
        onRunFinishedEvent: ({ pendingToolCallIds }) => {
          pending = pendingToolCallIds ?? [];
        },
      },
    );
    runs.push({ newMessages: result.newMessages, pendingToolCallIds: pending });
  }
  process.stdout.write(JSON.stringify({ messages: agent.messages, events, runs }) + "\n");
}

main().catch((err) => {
  process.stderr.write(`agui-client failed: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
