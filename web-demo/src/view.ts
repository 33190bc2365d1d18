/**
 * Renders the AG-UI message list into the page.
 *
 * Messages are grouped into turns: a user message, then one assistant turn
 * holding everything the agent produced until the next user message
 * (reasoning, answer text, tool calls and their results). Rendering is keyed
 * by message id and only touches elements whose message changed, so a
 * streaming answer re-renders one element per frame and a reasoning panel the
 * user opened stays open.
 */
import type { AssistantMessage, Message, ReasoningMessage, ToolMessage } from "@ag-ui/client";
import { renderMarkdown } from "./markdown";
import type { Visibility } from "./store";

/** What the view needs besides the messages. */
export interface ViewContext {
  /** Visibility asked for when each reasoning message was produced. */
  reasoningVisibility: Record<string, Visibility>;
  /** Ids of messages still streaming (their panels say so). */
  streaming: ReadonlySet<string>;
}

interface Rendered {
  element: HTMLElement;
  signature: string;
}

/** Byte size of a sealed value as it travels (its UTF-8 encoding). */
export function sealedSize(encryptedValue: string): number {
  return new TextEncoder().encode(encryptedValue).length;
}

function formatBytes(n: number): string {
  return n < 1024 ? `${n} B` : `${(n / 1024).toFixed(1)} KiB`;
}

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  text?: string,
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (part && typeof part === "object" && "text" in part ? String(part.text) : ""))
      .join("");
  }
  return "";
}

/** The conversation view: call {@link render} with the agent's messages whenever they change. */
export class ConversationView {
  private readonly turns = new Map<string, HTMLElement>();
  private readonly items = new Map<string, Rendered>();

  constructor(
    private readonly root: HTMLElement,
    private readonly empty: HTMLElement,
  ) {}

  /** Removes everything (new conversation). */
  clear(): void {
    for (const turn of this.turns.values()) turn.remove();
    this.turns.clear();
    this.items.clear();
  }

  render(messages: readonly Message[], context: ViewContext): void {
    const toolResults = new Map<string, ToolMessage>();
    for (const m of messages) if (m.role === "tool") toolResults.set(m.toolCallId, m);

    // Group: each user message is a turn; the messages after it form one assistant turn.
    const groups: Array<{ key: string; kind: "user" | "assistant"; messages: Message[] }> = [];
    for (const m of messages) {
      if (m.role === "user") {
        groups.push({ key: `u:${m.id}`, kind: "user", messages: [m] });
      } else if (m.role === "tool" || m.role === "activity") {
        // Shown inside the tool call it answers; activity messages are not used here.
        continue;
      } else {
        const last = groups[groups.length - 1];
        if (last && last.kind === "assistant") last.messages.push(m);
        else groups.push({ key: `a:${m.id}`, kind: "assistant", messages: [m] });
      }
    }

    this.empty.hidden = groups.length > 0;
    const liveTurns = new Set<string>();
    const liveItems = new Set<string>();
    groups.forEach((group, index) => {
      liveTurns.add(group.key);
      let turn = this.turns.get(group.key);
      if (!turn) {
        turn =
          group.kind === "user"
            ? el("section", { class: "turn user", "data-testid": "message-user" })
            : el("section", { class: "turn assistant", "data-testid": "assistant-turn" });
        this.turns.set(group.key, turn);
      }
      // Keep DOM order equal to message order without moving nodes that are in place.
      const expectedAt = this.root.children[index + 1]; // +1: the "empty" paragraph comes first
      if (expectedAt !== turn) this.root.insertBefore(turn, expectedAt ?? null);

      group.messages.forEach((m, position) => {
        liveItems.add(m.id);
        const item = this.renderItem(m, context, toolResults);
        if (turn.children[position] !== item) turn.insertBefore(item, turn.children[position] ?? null);
      });
      // Items that left this turn (should not happen with append-only messages).
      while (turn.children.length > group.messages.length) turn.lastElementChild?.remove();
    });

    for (const [key, turn] of this.turns) {
      if (!liveTurns.has(key)) {
        turn.remove();
        this.turns.delete(key);
      }
    }
    for (const id of this.items.keys()) if (!liveItems.has(id)) this.items.delete(id);
  }

  private renderItem(m: Message, context: ViewContext, toolResults: Map<string, ToolMessage>): HTMLElement {
    const streaming = context.streaming.has(m.id);
    const visibility = context.reasoningVisibility[m.id];
    const results =
      m.role === "assistant" ? (m.toolCalls ?? []).map((call) => toolResults.get(call.id)?.content ?? null) : [];
    const signature = JSON.stringify([m, streaming, visibility, results]);
    const existing = this.items.get(m.id);
    if (existing && existing.signature === signature) return existing.element;

    let element: HTMLElement;
    switch (m.role) {
      case "user":
        element = existing?.element ?? el("div", { class: "bubble", "data-testid": "user-text" });
        element.textContent = textOf(m.content);
        break;
      case "reasoning":
        element = this.renderReasoning(m, visibility, streaming, existing?.element);
        break;
      case "assistant":
        element = this.renderAssistant(m, streaming, toolResults, existing?.element);
        break;
      default:
        element = existing?.element ?? el("div", { class: "note", "data-testid": `message-${m.role}` });
        element.textContent = `${m.role}: ${textOf((m as { content?: unknown }).content)}`;
    }
    this.items.set(m.id, { element, signature });
    return element;
  }

  private renderReasoning(
    m: ReasoningMessage,
    visibility: Visibility | undefined,
    streaming: boolean,
    existing?: HTMLElement,
  ): HTMLElement {
    const panel = (existing as HTMLDetailsElement | undefined) ?? el("details", { class: "reasoning", "data-testid": "reasoning-panel" });
    const text = m.content ?? "";
    const sealed = m.encryptedValue ? sealedSize(m.encryptedValue) : null;
    if (!existing) {
      // Open while it streams readable text; afterwards the user decides.
      panel.open = streaming && text !== "" && visibility !== "hidden";
    } else if (streaming && text !== "" && !panel.dataset.seenText) {
      panel.open = true;
    }
    if (text !== "") panel.dataset.seenText = "1";
    panel.dataset.visibility = visibility ?? "unknown";
    panel.dataset.state = streaming ? "streaming" : "done";
    panel.replaceChildren();

    const summary = el("summary");
    const label =
      text === "" ? "Reasoning (sealed)" : visibility === "summary" ? "Reasoning summary" : "Reasoning";
    summary.append(el("span", { class: "label" }, streaming ? `${label} …` : label));
    if (sealed !== null) {
      const badge = el(
        "span",
        {
          class: "badge sealed",
          "data-testid": "sealed-badge",
          "data-bytes": String(sealed),
          title: "The model's reasoning, encrypted by the server. Only this browser keeps it; it goes back with the next turn.",
        },
        `sealed · ${formatBytes(sealed)}`,
      );
      summary.append(badge);
    }
    panel.append(summary);
    const body = el("div", { class: "reasoning-text", "data-testid": "reasoning-content" });
    body.textContent =
      text !== ""
        ? text
        : sealed !== null
          ? "Hidden: the server sent only the sealed value, which returns to the model on the next turn."
          : streaming
            ? "Thinking…"
            : "No readable reasoning.";
    if (text === "") body.classList.add("muted");
    panel.append(body);
    return panel;
  }

  private renderAssistant(
    m: AssistantMessage,
    streaming: boolean,
    toolResults: Map<string, ToolMessage>,
    existing?: HTMLElement,
  ): HTMLElement {
    const box = existing ?? el("div", { class: "assistant-message", "data-testid": "message-assistant" });
    box.replaceChildren();
    const text = m.content ?? "";
    if (text !== "" || (streaming && !m.toolCalls?.length)) {
      const answer = el("div", { class: "answer markdown", "data-testid": "answer" });
      answer.dataset.state = streaming ? "streaming" : "done";
      // renderMarkdown escapes raw HTML and sanitizes the result: model output is untrusted.
      answer.innerHTML = renderMarkdown(text);
      if (streaming) answer.append(el("span", { class: "cursor", "aria-hidden": "true" }));
      box.append(answer);
    }
    for (const call of m.toolCalls ?? []) {
      const result = toolResults.get(call.id);
      const card = el("div", { class: "tool-call", "data-testid": "tool-call", "data-tool": call.function.name });
      const head = el("div", { class: "tool-head" });
      head.append(el("span", { class: "badge tool" }, "tool"), el("code", {}, call.function.name));
      card.append(head);
      card.append(el("pre", { class: "tool-args" }, call.function.arguments || "{}"));
      if (result) {
        const out = el("pre", { class: "tool-result", "data-testid": "tool-result" }, textOf(result.content));
        if (result.error) out.classList.add("error");
        card.append(out);
      } else {
        card.append(el("div", { class: "tool-pending muted" }, "running in the page…"));
      }
      box.append(card);
    }
    return box;
  }
}
