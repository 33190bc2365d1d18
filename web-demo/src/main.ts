/**
 * The thinkwire web demo: wires the {@link WebSocketAgent} to the page.
 *
 * The agent (official `@ag-ui/client` pipeline) owns the messages; this file
 * only reacts: it renders on every change, persists at run boundaries, runs
 * frontend tools when a run ends with pending tool calls, and shows the
 * connection and errors.
 */
import type { AgentSubscriber, Message } from "@ag-ui/client";
import { FRONTEND_TOOLS, executeTool } from "./tools";
import {
  EFFORTS,
  VISIBILITIES,
  freshConversation,
  loadConversation,
  newId,
  saveConversation,
  type Conversation,
  type Effort,
  type Visibility,
} from "./store";
import { ConversationView } from "./view";
import { ProtoHttpAgent } from "./proto-agent";
import { WebSocketAgent, type ConnectionStatus } from "./ws-agent";

/** Tool round-trips one user message may trigger before the page stops asking. */
const MAX_TOOL_ROUNDS = 5;

const $ = <T extends HTMLElement>(testId: string): T => {
  const node = document.querySelector<T>(`[data-testid="${testId}"]`);
  if (!node) throw new Error(`page is missing [data-testid=${testId}]`);
  return node;
};

const ui = {
  conn: $("connection-state"),
  reconnect: $<HTMLButtonElement>("reconnect"),
  visibility: $<HTMLSelectElement>("visibility"),
  transport: $<HTMLSelectElement>("transport"),
  effort: $<HTMLSelectElement>("effort"),
  caps: $("capabilities"),
  newConversation: $<HTMLButtonElement>("new-conversation"),
  conversation: $("conversation"),
  empty: $("empty"),
  error: $("run-error"),
  errorMessage: $("run-error-message"),
  errorCode: $("run-error-code"),
  dismissError: $<HTMLButtonElement>("dismiss-error"),
  composer: $<HTMLFormElement>("composer"),
  input: $<HTMLTextAreaElement>("composer-input"),
  runStatus: $("run-status"),
  stop: $<HTMLButtonElement>("stop"),
  send: $<HTMLButtonElement>("send"),
};

/** `ws://host/…/agent/ws` next to the page, or `?ws=URL` to point elsewhere (development). */
function agentUrl(): string {
  const override = new URLSearchParams(location.search).get("ws");
  if (override) return override;
  const url = new URL("agent/ws", location.href);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  url.search = "";
  url.hash = "";
  return url.toString();
}

let conversation: Conversation = loadConversation();
const streaming = new Set<string>();
const view = new ConversationView(ui.conversation, ui.empty);

/** The transports the page can use: thinkwire's WebSocket, or AG-UI's HTTP protobuf binding. */
type Transport = "websocket" | "protobuf";
const TRANSPORT_KEY = "thinkwire-demo/transport";
const transport: Transport = localStorage.getItem(TRANSPORT_KEY) === "protobuf" ? "protobuf" : "websocket";

const capabilitiesUrl = new URL("capabilities", location.href).toString();
const agent: WebSocketAgent | ProtoHttpAgent =
  transport === "protobuf"
    ? new ProtoHttpAgent({
        url: new URL("agent", location.href).toString(),
        capabilitiesUrl,
        threadId: conversation.threadId,
        initialMessages: conversation.messages,
      })
    : new WebSocketAgent({
        url: agentUrl(),
        capabilitiesUrl,
        threadId: conversation.threadId,
        initialMessages: conversation.messages,
      });

// ---- rendering ------------------------------------------------------------

let renderQueued = false;
let stickToBottom = true;
function scheduleRender(): void {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    const scroller = document.scrollingElement ?? document.documentElement;
    stickToBottom = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 80;
    view.render(agent.messages, { reasoningVisibility: conversation.reasoningVisibility, streaming });
    if (stickToBottom) scroller.scrollTop = scroller.scrollHeight;
  });
}

function persist(): void {
  conversation.messages = agent.messages;
  conversation.threadId = agent.threadId;
  saveConversation(conversation);
}

agent.subscribe({ onMessagesChanged: scheduleRender });

// ---- connection ------------------------------------------------------------

let countdown: ReturnType<typeof setInterval> | undefined;
function showConnection(status: ConnectionStatus): void {
  ui.conn.dataset.state = status.state;
  const text = ui.conn.querySelector(".conn-text");
  clearInterval(countdown);
  const paint = () => {
    let label: string;
    switch (status.state) {
      case "open":
        label = "connected";
        break;
      case "connecting":
        label = status.attempt > 0 ? `connecting (attempt ${status.attempt + 1})…` : "connecting…";
        break;
      case "reconnecting": {
        const seconds = Math.max(0, Math.ceil(((status.retryAt ?? Date.now()) - Date.now()) / 1000));
        label = `disconnected: retrying in ${seconds} s`;
        break;
      }
      case "closed":
        label = "closed";
        break;
      default:
        label = "not connected";
    }
    if (text) text.textContent = label;
  };
  paint();
  if (status.state === "reconnecting") countdown = setInterval(paint, 500);
  ui.reconnect.hidden = status.state !== "reconnecting";
  ui.conn.title = status.lastClose ? `last close: code ${status.lastClose.code} ${status.lastClose.reason}` : "";
}
agent.onConnectionChange(showConnection);
ui.reconnect.addEventListener("click", () => agent.reconnect());
window.addEventListener("online", () => {
  // Skip the rest of the backoff wait: the network is back.
  if (agent.connection.state === "reconnecting") agent.reconnect();
});

// ---- capabilities ----------------------------------------------------------

interface ThinkwireCapabilities {
  identity?: { name?: string; version?: string };
  reasoning?: { supported?: boolean; streaming?: boolean; encrypted?: boolean };
  transports?: string[];
  transport?: Record<string, boolean>;
}

async function showCapabilities(): Promise<void> {
  try {
    const caps = (await agent.getCapabilities()) as ThinkwireCapabilities;
    const reasoning = caps.reasoning;
    const flags = reasoning
      ? reasoning.supported
        ? ["reasoning", reasoning.streaming ? "streamed" : "", reasoning.encrypted ? "sealed" : ""].filter(Boolean)
        : ["no reasoning"]
      : [];
    const transports =
      caps.transports ?? Object.entries(caps.transport ?? {}).filter(([, on]) => on).map(([name]) => name);
    const who = caps.identity?.name ? `${caps.identity.name}${caps.identity.version ? ` ${caps.identity.version}` : ""}: ` : "";
    ui.caps.textContent = [who + flags.join(" · "), transports.length ? `via ${transports.join(", ")}` : ""]
      .filter(Boolean)
      .join(" — ");
    ui.caps.dataset.reasoning = String(Boolean(reasoning?.supported));
  } catch {
    ui.caps.textContent = "capabilities unavailable";
    ui.caps.dataset.reasoning = "unknown";
  }
}

// ---- settings --------------------------------------------------------------

ui.transport.value = transport;
ui.transport.addEventListener("change", () => {
  // The agent is built at load: switching reloads the page, which keeps the conversation.
  localStorage.setItem(TRANSPORT_KEY, ui.transport.value === "protobuf" ? "protobuf" : "websocket");
  location.reload();
});
ui.visibility.value = conversation.settings.visibility;
ui.effort.value = conversation.settings.effort;
ui.visibility.addEventListener("change", () => {
  const value = ui.visibility.value as Visibility;
  if (VISIBILITIES.includes(value)) conversation.settings.visibility = value;
  saveConversation(conversation);
});
ui.effort.addEventListener("change", () => {
  const value = ui.effort.value as Effort;
  if (EFFORTS.includes(value)) conversation.settings.effort = value;
  saveConversation(conversation);
});

// ---- runs --------------------------------------------------------------------

let running = false;
let stopRequested = false;

function setRunning(on: boolean, status: string): void {
  running = on;
  ui.stop.disabled = !on;
  ui.send.disabled = on;
  ui.runStatus.dataset.state = on ? "running" : status;
  ui.runStatus.textContent = on ? "generating…" : status === "idle" ? "" : status;
  document.body.dataset.running = String(on);
}

function showError(message: string, code?: string): void {
  ui.errorMessage.textContent = message;
  ui.errorCode.textContent = code ?? "";
  ui.errorCode.hidden = !code;
  ui.error.hidden = false;
}

function clearError(): void {
  ui.error.hidden = true;
  ui.errorMessage.textContent = "";
  ui.errorCode.textContent = "";
}
ui.dismissError.addEventListener("click", clearError);

/** One run; returns the tool calls it left for the page, or null if the conversation should pause. */
async function runOnce(): Promise<string[] | null> {
  const { visibility, effort } = conversation.settings;
  let pending: string[] | null = null;
  let failed = false;
  let outcome = "done";
  const subscriber: AgentSubscriber = {
    onTextMessageStartEvent: ({ event }) => {
      streaming.add(event.messageId);
    },
    onTextMessageEndEvent: ({ event }) => {
      streaming.delete(event.messageId);
    },
    onReasoningMessageStartEvent: ({ event }) => {
      streaming.add(event.messageId);
      conversation.reasoningVisibility[event.messageId] = visibility;
    },
    onReasoningMessageEndEvent: ({ event }) => {
      streaming.delete(event.messageId);
      scheduleRender();
    },
    onRunFinishedEvent: (params) => {
      if (params.outcome === "success") {
        pending = params.pendingToolCallIds;
      } else if (params.outcome === "cancelled") {
        outcome = "stopped";
      } else {
        outcome = "interrupted";
      }
    },
    onRunErrorEvent: ({ event }) => {
      failed = true;
      outcome = "failed";
      showError(event.message, event.code);
    },
  };
  setRunning(true, "running");
  try {
    await agent.runAgent(
      { tools: FRONTEND_TOOLS, forwardedProps: { reasoning: { visibility, effort } } },
      subscriber,
    );
  } catch (error) {
    if (!failed) {
      const err = error instanceof Error ? error : new Error(String(error));
      showError(err.message, err.name !== "Error" ? err.name : undefined);
    }
    outcome = "failed";
    pending = null;
  } finally {
    streaming.clear();
    if (stopRequested && outcome === "done") outcome = "stopped";
    setRunning(false, outcome === "done" ? "idle" : outcome);
    persist();
    scheduleRender();
  }
  return failed ? null : pending;
}

/** Runs the agent, then answers the frontend tool calls it asks for and runs again. */
async function converse(): Promise<void> {
  stopRequested = false;
  for (let round = 0; round <= MAX_TOOL_ROUNDS; round++) {
    const pending = await runOnce();
    if (stopRequested || !pending || pending.length === 0) return;
    if (round === MAX_TOOL_ROUNDS) {
      showError(`stopped after ${MAX_TOOL_ROUNDS} tool rounds in a row`, "TOOL_LOOP");
      return;
    }
    const calls = new Map<string, { name: string; args: string }>();
    for (const m of agent.messages) {
      if (m.role === "assistant") for (const c of m.toolCalls ?? []) calls.set(c.id, { name: c.function.name, args: c.function.arguments });
    }
    const results: Message[] = pending.map((toolCallId) => {
      const call = calls.get(toolCallId);
      const outcome = call ? executeTool(call.name, call.args) : { content: '{"error":"unknown tool call"}', error: "unknown tool call" };
      return {
        id: newId("tool-"),
        role: "tool",
        toolCallId,
        content: outcome.content,
        ...(outcome.error ? { error: outcome.error } : {}),
      };
    });
    agent.addMessages(results);
    persist();
    scheduleRender();
  }
}

/** The conversation task in progress (a run and its tool rounds), if any. */
let task: Promise<void> | null = null;
let completedTurns = 0;

async function submit(): Promise<void> {
  const text = ui.input.value.trim();
  if (!text || task) return;
  clearError();
  ui.input.value = "";
  agent.addMessage({ id: newId("user-"), role: "user", content: text });
  persist();
  scheduleRender();
  task = converse().finally(() => {
    task = null;
    // A counter that tests (and tools) can wait on: it moves once per answered message.
    completedTurns++;
    document.body.dataset.completedTurns = String(completedTurns);
  });
  await task;
}

ui.composer.addEventListener("submit", (event) => {
  event.preventDefault();
  void submit();
});
ui.input.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    void submit();
  }
});
ui.stop.addEventListener("click", () => {
  if (!running) return;
  stopRequested = true;
  ui.runStatus.textContent = "stopping…";
  agent.abortRun();
});

ui.newConversation.addEventListener("click", async () => {
  if (task) {
    // Let the run end (cancelled) before the messages go: its last events would bring them back.
    stopRequested = true;
    agent.abortRun();
    await task;
  }
  clearError();
  conversation = freshConversation(conversation.settings);
  agent.threadId = conversation.threadId;
  agent.setMessages([]);
  view.clear();
  saveConversation(conversation);
  setRunning(false, "idle");
  scheduleRender();
  ui.input.focus();
});

// ---- start -------------------------------------------------------------------

/** For debugging from the console (and the browser tests): the agent and its messages. */
declare global {
  interface Window {
    thinkwireDemo?: { agent: WebSocketAgent | ProtoHttpAgent };
  }
}
window.thinkwireDemo = { agent };

setRunning(false, "idle");
scheduleRender();
agent.openConnection();
void showCapabilities();
ui.input.focus();
