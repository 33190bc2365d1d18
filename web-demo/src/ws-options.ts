/**
 * What a {@link WebSocketAgent} is configured with, reports and fails with:
 * its settings, its connection snapshot, its errors and the control frames
 * it sends. Kept apart from the agent's logic (`ws-agent.ts`).
 *
 * @module
 */
import type { AgentConfig } from "@ag-ui/client";

/** Where the socket stands. `closed` is final (after {@link WebSocketAgent.close}). */
export type ConnectionState = "idle" | "connecting" | "open" | "reconnecting" | "closed";

/** A snapshot of the connection, handed to {@link WebSocketAgent.onConnectionChange} listeners. */
export interface ConnectionStatus {
  state: ConnectionState;
  /** Consecutive failed attempts since the socket was last open. */
  attempt: number;
  /** When `reconnecting`: epoch ms of the next attempt. */
  retryAt?: number;
  /** Close code and reason of the socket that went away last, if any. */
  lastClose?: { code: number; reason: string };
}

/** Backoff between reconnection attempts: `min(maxDelayMs, initialDelayMs * factor^attempt)`, minus up to `jitter` of it. */
export interface ReconnectOptions {
  initialDelayMs?: number;
  maxDelayMs?: number;
  factor?: number;
  /** Fraction (0–1) of each delay that is randomised, so many tabs do not reconnect in lockstep. */
  jitter?: number;
}

/** The constructor of a WebSocket: the browser's by default; pass the `ws` package's in Node. */
export type WebSocketConstructor = new (url: string, protocols?: string | string[]) => WebSocket;

/** Configuration of a {@link WebSocketAgent}. */
export interface WebSocketAgentConfig extends AgentConfig {
  /** `ws://` or `wss://` URL of the agent's WebSocket endpoint (thinkwire: `/agent/ws`). */
  url: string;
  /** WebSocket subprotocols to offer. */
  protocols?: string | string[];
  /** Backoff settings, or `false` to never reconnect by itself. */
  reconnect?: ReconnectOptions | false;
  /** How long a run waits for an open socket before it fails (ms, default 15 000). */
  connectTimeoutMs?: number;
  /**
   * How long `abortRun()` waits for the server's cancelled `RUN_FINISHED` (ms,
   * default 10 000). Past it the run ends locally and the socket is replaced,
   * so a stuck server cannot keep the socket busy.
   */
  cancelTimeoutMs?: number;
  /** URL of a JSON capabilities document for {@link WebSocketAgent.getCapabilities} (thinkwire: `/capabilities`). */
  capabilitiesUrl?: string;
  /** WebSocket implementation (default: `globalThis.WebSocket`). */
  WebSocket?: WebSocketConstructor;
}

/** The run failed because the socket closed before the run ended. */
export class ConnectionLostError extends Error {
  constructor(
    /** Close code of the socket. */
    readonly code: number,
    /** Close reason of the socket (may be empty). */
    readonly reason: string,
  ) {
    super(`connection lost during the run (WebSocket closed with code ${code}${reason ? `: ${reason}` : ""})`);
    this.name = "ConnectionLostError";
  }
}

/** The server sent something that is not one AG-UI event as a JSON text frame. */
export class FramingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "FramingError";
  }
}

/**
 * The error a run ends with when it is aborted without the server's answer
 * (socket gone, cancel timed out, aborted before it was sent). Its `name` is
 * `AbortError`, which `AbstractAgent` treats as a quiet end rather than a
 * failure.
 */
export function abortError(why: string): Error {
  const error = new Error(`run aborted: ${why}`);
  error.name = "AbortError";
  return error;
}

/** The frame thinkwire accepts to stop a run on the socket. */
export interface CancelRunFrame {
  type: "CANCEL_RUN";
  runId: string;
}

export const DEFAULT_RECONNECT: Required<ReconnectOptions> = {
  initialDelayMs: 500,
  maxDelayMs: 15_000,
  factor: 2,
  jitter: 0.3,
};
