/**
 * thinkwire's resumable runs, the WebSocket side (docs/protocol.md,
 * "Resuming a run"): each event frame carries a `seq` member, the first
 * `RUN_STARTED` frame a `resume` grant; after a lost connection the client
 * sends `{"type":"RESUME_RUN","resumeId","token","lastSeq"}` on a new socket
 * and the server continues after `lastSeq`.
 *
 * These members are thinkwire's, not AG-UI's: {@link splitFrame} takes them
 * off so the official pipeline sees plain events.
 *
 * @module
 */
import type { BaseEvent } from "@ag-ui/client";

/** How to resume a run: returned once, on the `RUN_STARTED` frame of the socket that started it. */
export interface ResumeGrant {
  /** Names the run (server-made: a client's runId need not be unique). */
  id: string;
  /** Where an HTTP client resumes it. */
  url: string;
  /** The secret that proves this client holds the run. */
  token: string;
  /** How long the server waits for the client after the connection is lost. */
  windowSecs: number;
}

/** The control frame that resumes a run. */
export interface ResumeRunFrame {
  type: "RESUME_RUN";
  resumeId: string;
  token: string;
  lastSeq: number;
}

/** An event frame taken apart. */
export interface SplitFrame {
  event: BaseEvent;
  seq?: number;
  grant?: ResumeGrant;
}

function isGrant(value: unknown): value is ResumeGrant {
  if (typeof value !== "object" || value === null) return false;
  const g = value as Record<string, unknown>;
  return typeof g.id === "string" && typeof g.token === "string" && typeof g.windowSecs === "number";
}

/** The AG-UI event of a parsed frame, without thinkwire's `seq` and `resume` members. */
export function splitFrame(frame: BaseEvent & { seq?: unknown; resume?: unknown }): SplitFrame {
  const { seq, resume, ...event } = frame;
  return {
    event: event as BaseEvent,
    seq: typeof seq === "number" && Number.isSafeInteger(seq) ? seq : undefined,
    grant: isGrant(resume) ? resume : undefined,
  };
}

/** What one run needs to resume: its grant, what it has received, and until when the server waits. */
export class RunResume {
  grant?: ResumeGrant;
  /** The last sequence number received (0: none). */
  lastSeq = 0;
  /** Epoch ms until which the server holds the run, once the connection is lost. */
  resumeBy?: number;

  /**
   * Whether a frame with `seq` is new. A frame without one (a server without
   * resumption, or a lone refusal) always is; a repeat never is.
   */
  accept(seq: number | undefined): boolean {
    if (seq === undefined) return true;
    if (seq <= this.lastSeq) return false;
    this.lastSeq = seq;
    return true;
  }

  /** Whether the run can be resumed at `now` (it has a grant and the window is open). */
  canResume(now: number): boolean {
    return this.grant !== undefined && (this.resumeBy === undefined || now < this.resumeBy);
  }

  /** The connection went at `now`: the server's window starts. */
  lost(now: number): void {
    if (this.grant) this.resumeBy = now + this.grant.windowSecs * 1000;
  }

  /** The frame that resumes the run after the last event received. */
  frame(): string {
    if (!this.grant) throw new Error("no resume grant for this run");
    const frame: ResumeRunFrame = { type: "RESUME_RUN", resumeId: this.grant.id, token: this.grant.token, lastSeq: this.lastSeq };
    return JSON.stringify(frame);
  }
}
