/**
 * AG-UI 1.0 over a WebSocket, as an `AbstractAgent` of the official
 * `@ag-ui/client`.
 *
 * The official SDK ships only HTTP transports. This module carries the same
 * runs over one long-lived WebSocket, with the framing thinkwire (and the open
 * AG-UI WebSocket proposal) uses:
 *
 * - the client sends one text frame holding a `RunAgentInput` (JSON);
 * - the server answers with one text frame per AG-UI event (the same JSON an
 *   SSE `data:` line would carry);
 * - a run ends at `RUN_FINISHED` or `RUN_ERROR`; further runs may follow on
 *   the same socket, one at a time;
 * - to stop a run the client sends `{"type":"CANCEL_RUN","runId":"…"}`; the
 *   server closes whatever is open and ends the run with `RUN_FINISHED` and
 *   `outcome: {type: "cancelled"}`.
 *
 * `WebSocketAgent.run()` only moves frames: the events it emits go through the
 * SDK's own pipeline (schema enforcement, chunk expansion, sequence
 * verification, applying events to `agent.messages`), exactly as with
 * `HttpAgent`. Reasoning messages and their `encryptedValue` therefore land in
 * `agent.messages` and travel back to the server on the next run.
 *
 * The socket reconnects by itself with exponential backoff when it drops. A
 * run that is in flight when the socket drops is resumed on the new socket
 * (thinkwire's `RESUME_RUN`, `resume.ts`) within the server's resume window:
 * the events after the last one received continue, none repeated. A run
 * that cannot be resumed (no grant, window over, taken over by another
 * connection) fails with a {@link ConnectionLostError}.
 *
 * No UI code lives here: lift the file into any app.
 *
 * @example
 * ```ts
 * const agent = new WebSocketAgent({ url: "ws://127.0.0.1:8080/agent/ws" });
 * agent.onConnectionChange((status) => console.log(status.state));
 * agent.addMessage({ id: "u1", role: "user", content: "Hello" });
 * await agent.runAgent({ forwardedProps: { reasoning: { visibility: "full" } } });
 * console.log(agent.messages);
 * stopButton.onclick = () => agent.abortRun(); // server ends the run as cancelled
 * ```
 *
 * @module
 */
import { AbstractAgent, enforceOutgoingInput } from "@ag-ui/client";
import type { AgentCapabilities, BaseEvent, RunAgentInput } from "@ag-ui/client";
import { Observable, type Subscriber } from "rxjs";
import { RunResume, splitFrame } from "./resume";
import {
  ConnectionLostError,
  DEFAULT_RECONNECT,
  FramingError,
  abortError,
  type CancelRunFrame,
  type ConnectionStatus,
  type WebSocketAgentConfig,
  type WebSocketConstructor,
} from "./ws-options";

export {
  ConnectionLostError,
  FramingError,
  type CancelRunFrame,
  type ConnectionState,
  type ConnectionStatus,
  type ReconnectOptions,
  type WebSocketAgentConfig,
  type WebSocketConstructor,
} from "./ws-options";

/** `WebSocket.OPEN`, spelled out so a WebSocket implementation without the static works too. */
const OPEN = 1;

/** Close code the client uses when it replaces a socket itself (4000–4999 are for applications). */
const CLOSE_REPLACED = 4000;

/** Close code of a socket whose run another connection resumed: this one must not resume it again. */
const CLOSE_TAKEN_OVER = 4001;

interface ActiveRun {
  runId: string;
  payload: string;
  subscriber: Subscriber<BaseEvent>;
  /** The input frame went out on a socket. */
  sent: boolean;
  /** The server ended it (or it ended locally); no more frames belong to it. */
  ended: boolean;
  /** Nobody listens any more, but the server may still stream it: swallow its frames. */
  detached: boolean;
  cancelRequested: boolean;
  cancelTimer?: ReturnType<typeof setTimeout>;
  /** Grant and progress, to resume after a lost connection. */
  resume: RunResume;
  /** Lost its socket; resumes on the next one. */
  resuming: boolean;
  resumeTimer?: ReturnType<typeof setTimeout>;
}

/**
 * An `AbstractAgent` whose runs travel over one persistent WebSocket.
 *
 * Use it like `HttpAgent`: `addMessage`, `runAgent`, `abortRun`, subscribers.
 * On top, it reports its connection ({@link onConnectionChange}) and can be
 * connected eagerly ({@link openConnection}) so a UI shows the state before the first
 * run.
 */
export class WebSocketAgent extends AbstractAgent {
  /** The endpoint this agent connects to. */
  readonly url: string;
  private readonly wsConfig: WebSocketAgentConfig;
  private socket: WebSocket | null = null;
  private status: ConnectionStatus = { state: "idle", attempt: 0 };
  private readonly listeners = new Set<(status: ConnectionStatus) => void>();
  private reconnectTimer?: ReturnType<typeof setTimeout>;
  /** The run whose frames the socket carries now. */
  private activeRun: ActiveRun | null = null;
  /** A run waiting for an open socket, or for a cancelled run to drain. */
  private pendingRun: ActiveRun | null = null;
  private pendingTimer?: ReturnType<typeof setTimeout>;
  private closedByUser = false;

  constructor(config: WebSocketAgentConfig) {
    super(config);
    this.url = config.url;
    this.wsConfig = { ...config, initialMessages: undefined, initialState: undefined };
  }

  /** The current connection snapshot. */
  get connection(): ConnectionStatus {
    return { ...this.status };
  }

  /**
   * Calls `listener` now and on every connection change. Returns a function
   * that removes it.
   */
  onConnectionChange(listener: (status: ConnectionStatus) => void): () => void {
    this.listeners.add(listener);
    listener(this.connection);
    return () => this.listeners.delete(listener);
  }

  /** Opens the socket now instead of at the first run. Safe to call repeatedly. */
  openConnection(): void {
    this.closedByUser = false;
    if (this.socket) return;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    this.openSocket();
  }

  /**
   * Replaces the socket with a fresh one (a run in flight resumes on it).
   * Useful after the network came back, and to exercise reconnection in
   * tests.
   */
  reconnect(): void {
    this.closedByUser = false;
    if (this.socket) {
      this.socket.close(CLOSE_REPLACED, "client reconnect");
      // onclose schedules the next attempt; make it immediate.
      this.status.attempt = 0;
    } else {
      this.openConnection();
    }
  }

  /** Closes the socket for good: no reconnection. A run in flight is aborted. */
  close(): void {
    this.closedByUser = true;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    const socket = this.socket;
    this.socket = null;
    if (socket) {
      this.detachSocketHandlers(socket);
      socket.close(1000, "client done");
    }
    if (this.activeRun) this.endRun(this.activeRun, abortError("agent closed"));
    if (this.pendingRun) this.endRun(this.pendingRun, abortError("agent closed"));
    this.setStatus({ state: "closed", attempt: 0 });
  }

  /**
   * Sends `RunAgentInput` as one text frame and emits the server's events
   * until `RUN_FINISHED` or `RUN_ERROR`. Called by `runAgent()`; one run at a
   * time per agent.
   */
  run(input: RunAgentInput): Observable<BaseEvent> {
    return new Observable<BaseEvent>((subscriber) => {
      if ((this.activeRun && !this.activeRun.detached) || this.pendingRun) {
        subscriber.error(new Error("a run is already active on this WebSocketAgent"));
        return;
      }
      let payload: string;
      try {
        // The same normalisation HttpAgent applies: unknown material stripped, shape checked.
        payload = JSON.stringify(enforceOutgoingInput(input));
      } catch (error) {
        subscriber.error(error);
        return;
      }
      const run: ActiveRun = {
        runId: input.runId,
        payload,
        subscriber,
        sent: false,
        ended: false,
        detached: false,
        cancelRequested: false,
        resume: new RunResume(),
        resuming: false,
      };
      this.queue(run);
      return () => {
        // Unsubscribed before the run ended (e.g. detachActiveRun): stop the
        // server's work, and swallow the rest of this run's frames.
        if (run.ended) return;
        run.detached = true;
        if (!run.sent) {
          this.endRun(run);
        } else if (!run.cancelRequested) {
          this.requestCancel(run);
        }
      };
    });
  }

  /**
   * Asks the server to stop the current run (`CANCEL_RUN` frame). The run then
   * ends through the normal pipeline with a `RUN_FINISHED` whose outcome is
   * `cancelled`. If the socket is gone, or the server does not answer within
   * `cancelTimeoutMs`, the run ends quietly on the client side.
   */
  override abortRun(): void {
    const run = this.activeRun ?? this.pendingRun;
    if (run && !run.ended && !run.cancelRequested) {
      if (!run.sent) {
        this.endRun(run, abortError("aborted before it was sent"));
      } else {
        this.requestCancel(run);
      }
    }
    super.abortRun();
  }

  /**
   * Fetches the capabilities document named by `capabilitiesUrl` (thinkwire's
   * `/capabilities`). The object is returned as the server wrote it.
   */
  override async getCapabilities(): Promise<AgentCapabilities> {
    if (!this.wsConfig.capabilitiesUrl) {
      throw new Error("no capabilitiesUrl configured");
    }
    const response = await fetch(this.wsConfig.capabilitiesUrl, { headers: { Accept: "application/json" } });
    if (!response.ok) throw new Error(`capabilities: HTTP ${response.status}`);
    return (await response.json()) as AgentCapabilities;
  }

  /** A copy with the same messages, state and subscribers, and its own socket (opened lazily). */
  override clone(): WebSocketAgent {
    const copy = new WebSocketAgent({
      ...this.wsConfig,
      agentId: this.agentId,
      description: this.description,
      threadId: this.threadId,
      initialMessages: structuredClone(this.messages),
      initialState: structuredClone(this.state),
    });
    copy.subscribers = [...this.subscribers];
    copy.isRunning = this.isRunning;
    return copy;
  }

  // ---- connection -------------------------------------------------------

  private setStatus(status: ConnectionStatus): void {
    this.status = status;
    const snapshot = this.connection;
    for (const listener of this.listeners) {
      try {
        listener(snapshot);
      } catch (error) {
        console.error("connection listener failed", error);
      }
    }
  }

  private openSocket(): void {
    const Impl: WebSocketConstructor | undefined =
      this.wsConfig.WebSocket ?? (globalThis.WebSocket as WebSocketConstructor | undefined);
    if (!Impl) throw new Error("no WebSocket implementation: pass one as config.WebSocket");
    this.setStatus({ ...this.status, state: "connecting", retryAt: undefined });
    let socket: WebSocket;
    try {
      socket = new Impl(this.url, this.wsConfig.protocols);
    } catch (error) {
      // A malformed URL throws synchronously; treat it like a failed attempt.
      console.error("WebSocket could not be created", error);
      this.scheduleReconnect({ code: 1006, reason: "could not create socket" });
      return;
    }
    this.socket = socket;
    socket.onopen = () => {
      if (this.socket !== socket) return;
      this.setStatus({ state: "open", attempt: 0, lastClose: this.status.lastClose });
      const run = this.activeRun;
      if (run?.resuming) {
        run.resuming = false;
        clearTimeout(run.resumeTimer);
        socket.send(run.resume.frame());
      }
      this.startPending();
    };
    socket.onmessage = (message: MessageEvent) => {
      if (this.socket !== socket) return;
      this.handleFrame(message.data);
    };
    socket.onerror = () => {
      // A close event always follows; that is where it is handled.
    };
    socket.onclose = (event: CloseEvent) => {
      if (this.socket !== socket) return;
      this.socket = null;
      const lastClose = { code: event.code, reason: event.reason };
      const run = this.activeRun;
      if (run && run.sent && !run.ended) {
        const now = Date.now();
        if (!run.cancelRequested && !this.closedByUser && event.code !== CLOSE_TAKEN_OVER && run.resume.canResume(now)) {
          this.holdForResume(run, event.code, event.reason, now);
        } else {
          this.endRun(
            run,
            run.cancelRequested ? abortError("socket closed while cancelling") : new ConnectionLostError(event.code, event.reason),
          );
        }
      }
      if (this.closedByUser) {
        this.setStatus({ state: "closed", attempt: 0, lastClose });
      } else {
        this.scheduleReconnect(lastClose);
      }
    };
  }

  private detachSocketHandlers(socket: WebSocket): void {
    socket.onopen = null;
    socket.onmessage = null;
    socket.onerror = null;
    socket.onclose = null;
  }

  private scheduleReconnect(lastClose: { code: number; reason: string }): void {
    if (this.wsConfig.reconnect === false) {
      this.setStatus({ state: "idle", attempt: this.status.attempt, lastClose });
      if (this.pendingRun) this.endRun(this.pendingRun, new ConnectionLostError(lastClose.code, lastClose.reason));
      return;
    }
    const options = { ...DEFAULT_RECONNECT, ...(this.wsConfig.reconnect ?? {}) };
    const attempt = this.status.attempt;
    const base = Math.min(options.maxDelayMs, options.initialDelayMs * options.factor ** attempt);
    const delay = Math.round(base * (1 - options.jitter * Math.random()));
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      if (!this.closedByUser && !this.socket) this.openSocket();
    }, delay);
    this.setStatus({ state: "reconnecting", attempt: attempt + 1, retryAt: Date.now() + delay, lastClose });
  }

  // ---- runs ---------------------------------------------------------------

  /** Holds `run` until the socket is open and free, within `connectTimeoutMs`. */
  private queue(run: ActiveRun): void {
    this.pendingRun = run;
    const timeoutMs = this.wsConfig.connectTimeoutMs ?? 15_000;
    this.pendingTimer = setTimeout(() => {
      if (this.pendingRun === run) {
        this.endRun(run, new Error(`no open WebSocket to ${this.url} within ${timeoutMs} ms`));
      }
    }, timeoutMs);
    if (!this.socket) {
      // Skip the rest of a backoff wait: someone needs the socket now.
      this.openConnection();
    }
    this.startPending();
  }

  /** Sends the pending run if the socket is open and no earlier run still holds it. */
  private startPending(): void {
    const run = this.pendingRun;
    const socket = this.socket;
    if (!run || this.activeRun || !socket || socket.readyState !== OPEN) return;
    this.pendingRun = null;
    clearTimeout(this.pendingTimer);
    this.activeRun = run;
    socket.send(run.payload);
    run.sent = true;
  }

  /** Keeps `run` to resume on the next socket, until the server's window closes. */
  private holdForResume(run: ActiveRun, code: number, reason: string, now: number): void {
    run.resume.lost(now);
    run.resuming = true;
    clearTimeout(run.resumeTimer);
    run.resumeTimer = setTimeout(
      () => {
        if (run.resuming && !run.ended) this.endRun(run, new ConnectionLostError(code, reason));
      },
      Math.max(0, (run.resume.resumeBy ?? now) - now),
    );
  }

  private requestCancel(run: ActiveRun): void {
    run.cancelRequested = true;
    const frame: CancelRunFrame = { type: "CANCEL_RUN", runId: run.runId };
    const socket = this.socket;
    if (!socket || socket.readyState !== OPEN) {
      this.endRun(run, abortError("socket not open"));
      return;
    }
    socket.send(JSON.stringify(frame));
    run.cancelTimer = setTimeout(() => {
      if (run.ended) return;
      // The server did not confirm: end locally and replace the socket, whose
      // remaining frames would otherwise belong to nobody.
      this.endRun(run, abortError("server did not confirm the cancel in time"));
      if (this.socket === socket) {
        this.socket = null;
        this.detachSocketHandlers(socket);
        socket.close(CLOSE_REPLACED, "cancel timed out");
        this.status.attempt = 0;
        this.scheduleReconnect({ code: CLOSE_REPLACED, reason: "cancel timed out" });
      }
    }, this.wsConfig.cancelTimeoutMs ?? 10_000);
  }

  private handleFrame(data: unknown): void {
    const run = this.activeRun;
    if (typeof data !== "string") {
      if (run) this.endRun(run, new FramingError("binary frame received; AG-UI events travel as JSON text frames"));
      return;
    }
    if (!run || run.ended) {
      // A late frame of a run that already ended locally: nobody owns it.
      return;
    }
    let parsed: BaseEvent;
    try {
      parsed = JSON.parse(data) as BaseEvent;
    } catch {
      this.endRun(run, new FramingError("a frame is not valid JSON"));
      return;
    }
    if (typeof parsed !== "object" || parsed === null || typeof parsed.type !== "string") {
      this.endRun(run, new FramingError("a frame is not an AG-UI event object"));
      return;
    }
    const { event, seq, grant } = splitFrame(parsed);
    if (grant) run.resume.grant = grant;
    // A repeat (sent before a resume and again after it) is dropped.
    if (!run.resume.accept(seq)) return;
    if (!run.detached) run.subscriber.next(event);
    if (event.type === "RUN_FINISHED" || event.type === "RUN_ERROR") {
      this.endRun(run);
    }
  }

  /** Ends `run` (completes, or errors with `error`), frees the socket for the next run. */
  private endRun(run: ActiveRun, error?: Error): void {
    if (run.ended) return;
    run.ended = true;
    run.resuming = false;
    clearTimeout(run.cancelTimer);
    clearTimeout(run.resumeTimer);
    if (this.activeRun === run) this.activeRun = null;
    if (this.pendingRun === run) {
      this.pendingRun = null;
      clearTimeout(this.pendingTimer);
    }
    if (!run.detached) {
      if (error) run.subscriber.error(error);
      else run.subscriber.complete();
    }
    this.startPending();
  }
}
