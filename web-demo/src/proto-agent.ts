/**
 * The demo's other transport: the official `@ag-ui/client` `HttpAgent`
 * asking `POST /agent` for AG-UI's protobuf binding
 * (`application/vnd.ag-ui.event+proto`), which the client decodes with
 * `@ag-ui/proto`. `HttpAgent` always sends `Accept: text/event-stream`; its
 * own extension point, `requestInit`, is where the Accept is replaced.
 *
 * HTTP holds no connection between runs, so the connection surface the page
 * shows ({@link ProtoHttpAgent.onConnectionChange}) is always `open`; a run
 * whose response breaks fails (resuming is the WebSocket transport's).
 *
 * @module
 */
import { HttpAgent } from "@ag-ui/client";
import type { AgentCapabilities, HttpAgentConfig, RunAgentInput } from "@ag-ui/client";
import type { ConnectionStatus } from "./ws-agent";

/** AG-UI's protobuf media type. */
export const PROTO_MEDIA_TYPE = "application/vnd.ag-ui.event+proto";

/** Configuration of a {@link ProtoHttpAgent}. */
export interface ProtoHttpAgentConfig extends HttpAgentConfig {
  /** URL of the capabilities document (thinkwire: `/capabilities`). */
  capabilitiesUrl?: string;
}

/** `HttpAgent` over the protobuf binding, with the page's connection surface. */
export class ProtoHttpAgent extends HttpAgent {
  private readonly capabilitiesUrl?: string;

  constructor(config: ProtoHttpAgentConfig) {
    super(config);
    this.capabilitiesUrl = config.capabilitiesUrl;
  }

  protected override requestInit(input: RunAgentInput): RequestInit {
    const init = super.requestInit(input);
    const headers = new Headers(init.headers);
    headers.set("Accept", PROTO_MEDIA_TYPE);
    return { ...init, headers };
  }

  /** Always `open`: HTTP connects per run. */
  get connection(): ConnectionStatus {
    return { state: "open", attempt: 0 };
  }

  /** Calls `listener` once: the state never changes. */
  onConnectionChange(listener: (status: ConnectionStatus) => void): () => void {
    listener(this.connection);
    return () => {};
  }

  /** Nothing to open. */
  openConnection(): void {}

  /** Nothing to replace. */
  reconnect(): void {}

  override async getCapabilities(): Promise<AgentCapabilities> {
    if (!this.capabilitiesUrl) throw new Error("no capabilitiesUrl configured");
    const response = await fetch(this.capabilitiesUrl, { headers: { Accept: "application/json" } });
    if (!response.ok) throw new Error(`capabilities: HTTP ${response.status}`);
    return (await response.json()) as AgentCapabilities;
  }
}
