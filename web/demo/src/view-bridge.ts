// The view card's side of MCP Apps: JSON-RPC 2.0 over postMessage with
// the host that drew it (window.parent). The official package's App is
// built on the MCP SDK's Protocol, which validates with zod: 600 KB in a
// card that needs a handful of messages. So the card speaks those itself, each
// typed by the package's own protocol types (type-only imports: none of
// the package's code is bundled), and its tests run it against the
// package's host side (AppBridge).

import type { CallToolRequestParams, CallToolResult, Implementation, JSONRPCMessage } from "@modelcontextprotocol/client";
import type {
  INITIALIZE_METHOD, INITIALIZED_METHOD, LATEST_PROTOCOL_VERSION, McpUiHostContext, McpUiInitializeRequest,
  McpUiInitializeResult, McpUiOpenLinkRequest, McpUiOpenLinkResult, McpUiSizeChangedNotification, OPEN_LINK_METHOD,
} from "@modelcontextprotocol/ext-apps";

/** The MCP Apps version the card speaks: the package's, checked by the type. */
const VERSION: typeof LATEST_PROTOCOL_VERSION = "2026-01-26";
const INITIALIZE: typeof INITIALIZE_METHOD = "ui/initialize";
const INITIALIZED: typeof INITIALIZED_METHOD = "ui/notifications/initialized";
const OPEN_LINK: typeof OPEN_LINK_METHOD = "ui/open-link";

/** How long a request waits for the host's answer (the MCP SDK's default). */
export const REQUEST_TIMEOUT_MS = 60_000;

/** Where the card's messages go and come from: the host's window, or a test's channel. */
export interface Port {
  post(message: JSONRPCMessage): void;
  /** listen hands every message from the host to receive. */
  listen(receive: (message: unknown) => void): void;
}

/** parentPort is the host that drew the card: its window, the only sender listened to. */
export function parentPort(): Port {
  return {
    post: (message) => window.parent.postMessage(message, "*"),
    listen: (receive) => window.addEventListener("message", (e) => {
      if (e.source === window.parent) receive(e.data);
    }),
  };
}

interface Waiting {
  resolve(result: unknown): void;
  reject(err: Error): void;
}

/** The host's side of what arrives: what the card reads of a message before trusting its shape. */
type Incoming = { id?: unknown; method?: unknown; params?: unknown; result?: unknown; error?: unknown };

/** View is the card's connection to its host. */
export class View {
  /** Called with each tool result the host hands the card. */
  ontoolresult: ((result: CallToolResult) => void) | undefined;
  /** Called with what changed of the host's context (its theme, say). */
  onhostcontextchanged: ((change: McpUiHostContext) => void) | undefined;
  private context: McpUiHostContext = {};
  private nextId = 1;
  private readonly waiting = new Map<number, Waiting>();

  constructor(private readonly info: Implementation, private readonly port: Port = parentPort()) {}

  /** connect makes the handshake (ui/initialize, then initialized) and returns the host's context. */
  async connect(): Promise<McpUiHostContext> {
    this.port.listen((m) => this.receive(m));
    const params: McpUiInitializeRequest["params"] = { appInfo: this.info, appCapabilities: {}, protocolVersion: VERSION };
    const result = (await this.request(INITIALIZE, params)) as Partial<McpUiInitializeResult>;
    this.context = isObject(result.hostContext) ? result.hostContext : {};
    this.port.post({ jsonrpc: "2.0", method: INITIALIZED, params: {} });
    return this.context;
  }

  /** The host's context as the handshake and its changes made it. */
  get hostContext(): McpUiHostContext {
    return this.context;
  }

  /** callServerTool calls a tool of the card's server through the host. */
  async callServerTool(params: CallToolRequestParams): Promise<CallToolResult> {
    return (await this.request("tools/call", params)) as CallToolResult;
  }

  /** openLink asks the host to open url. */
  async openLink(params: McpUiOpenLinkRequest["params"]): Promise<McpUiOpenLinkResult> {
    return (await this.request(OPEN_LINK, params)) as McpUiOpenLinkResult;
  }

  /** sendSizeChanged tells the host the card's size, so it can fit the frame to it. */
  sendSizeChanged(params: McpUiSizeChangedNotification["params"]): void {
    const note: McpUiSizeChangedNotification = { method: "ui/notifications/size-changed", params };
    this.port.post({ jsonrpc: "2.0", ...note });
  }

  private request(method: string, params: object): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => this.settle(id, { error: { message: `no answer within ${REQUEST_TIMEOUT_MS / 1000} s` } }), REQUEST_TIMEOUT_MS);
      const done = () => clearTimeout(timer);
      this.waiting.set(id, { resolve: (r) => (done(), resolve(r)), reject: (e) => (done(), reject(e)) });
      this.port.post({ jsonrpc: "2.0", id, method, params: params as Record<string, unknown> });
    });
  }

  /** receive takes one message from the host; what is not JSON-RPC 2.0 is dropped. */
  private receive(raw: unknown): void {
    if (!isObject(raw) || raw["jsonrpc"] !== "2.0") return;
    const m = raw as Incoming;
    if (typeof m.method !== "string") {
      if (typeof m.id === "number") this.settle(m.id, m);
      return;
    }
    if (m.id === undefined) return this.notified(m.method, m.params);
    if (typeof m.id !== "string" && typeof m.id !== "number") return;
    // The host's requests: ping and teardown are answered, nothing else is the card's.
    if (m.method === "ping" || m.method === "ui/resource-teardown") this.port.post({ jsonrpc: "2.0", id: m.id, result: {} });
    else this.port.post({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: `Method not found: ${m.method}` } });
  }

  private notified(method: string, params: unknown): void {
    if (!isObject(params)) return;
    if (method === "ui/notifications/tool-result") this.ontoolresult?.(params as CallToolResult);
    else if (method === "ui/notifications/host-context-changed") {
      this.context = { ...this.context, ...params };
      this.onhostcontextchanged?.(params as McpUiHostContext);
    }
  }

  /** settle ends the request id with the host's answer: its result, or its error in words. */
  private settle(id: number, answer: Incoming): void {
    const w = this.waiting.get(id);
    if (!w) return;
    this.waiting.delete(id);
    if (answer.error === undefined) return w.resolve(isObject(answer.result) ? answer.result : {});
    const message = isObject(answer.error) && typeof answer.error["message"] === "string" ? answer.error["message"] : "the host answered with an error";
    w.reject(new Error(message));
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
