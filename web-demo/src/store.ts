/**
 * The conversation in localStorage. It holds the AG-UI messages exactly as
 * the agent keeps them, reasoning messages with their `encryptedValue`
 * included: that sealed value is the only copy of the model's earlier
 * thinking (the server keeps nothing), so a reload, or a server restart with
 * the same key, continues with it.
 */
import type { Message } from "@ag-ui/client";

/** Reasoning visibility the page asks for (`forwardedProps.reasoning.visibility`). */
export type Visibility = "hidden" | "summary" | "full" | "off";
/** Reasoning effort the page asks for (`forwardedProps.reasoning.effort`). */
export type Effort = "low" | "medium" | "high";

export const VISIBILITIES: Visibility[] = ["hidden", "summary", "full", "off"];
export const EFFORTS: Effort[] = ["low", "medium", "high"];

/** The user's controls. */
export interface Settings {
  visibility: Visibility;
  effort: Effort;
}

/** Everything that survives a reload. */
export interface Conversation {
  threadId: string;
  messages: Message[];
  settings: Settings;
  /** For each reasoning message id: the visibility that was asked for when it was produced. */
  reasoningVisibility: Record<string, Visibility>;
}

const KEY = "thinkwire-demo/conversation/v1";

/** A random id; `crypto.randomUUID` needs a secure context, `getRandomValues` does not. */
export function newId(prefix = ""): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  const uuid = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  return prefix + uuid;
}

/** A fresh, empty conversation that keeps the given settings. */
export function freshConversation(settings?: Settings): Conversation {
  return {
    threadId: newId("thread-"),
    messages: [],
    settings: settings ?? { visibility: "full", effort: "medium" },
    reasoningVisibility: {},
  };
}

function isMessage(value: unknown): value is Message {
  if (typeof value !== "object" || value === null) return false;
  const m = value as Record<string, unknown>;
  return typeof m.id === "string" && typeof m.role === "string";
}

/** The saved conversation, or a fresh one if there is none or it is unreadable. */
export function loadConversation(storage: Storage = localStorage): Conversation {
  let raw: string | null = null;
  try {
    raw = storage.getItem(KEY);
  } catch {
    // Storage disabled (private mode, policy): run without persistence.
  }
  if (!raw) return freshConversation();
  try {
    const saved = JSON.parse(raw) as Partial<Conversation>;
    const fresh = freshConversation();
    const settings = saved.settings ?? fresh.settings;
    return {
      threadId: typeof saved.threadId === "string" ? saved.threadId : fresh.threadId,
      messages: Array.isArray(saved.messages) ? saved.messages.filter(isMessage) : [],
      settings: {
        visibility: VISIBILITIES.includes(settings.visibility) ? settings.visibility : fresh.settings.visibility,
        effort: EFFORTS.includes(settings.effort) ? settings.effort : fresh.settings.effort,
      },
      reasoningVisibility:
        typeof saved.reasoningVisibility === "object" && saved.reasoningVisibility !== null
          ? saved.reasoningVisibility
          : {},
    };
  } catch {
    return freshConversation();
  }
}

/** Saves the conversation; returns false if storage refused (quota, disabled). */
export function saveConversation(conversation: Conversation, storage: Storage = localStorage): boolean {
  try {
    storage.setItem(KEY, JSON.stringify(conversation));
    return true;
  } catch {
    return false;
  }
}
