// The tab wire protocol's vocabulary (docs/tab-protocol.md), written once.
// It mirrors protocol/messages.go; test/protocol-agreement.test.ts fails
// when the two lists of message types drift apart.

/** The protocol version this SDK speaks (§3). */
export const PROTOCOL_VERSION = 1;

/** The largest message either side may send after the welcome (§2). */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

/** The largest hello the relay reads (§2). */
export const MAX_HELLO_BYTES = 4096;

/** Message types a tab sends (§4). */
export const TAB_MESSAGE_TYPES = [
  "hello", "focus", "result", "asking", "answered", "step", "progress", "permissions", "log",
  "permissions-changed", "approve", "decline", "list-connections", "forget", "set-scope", "connect-info", "pong",
] as const;

/** Message types the relay sends (§4); a connect-info request is answered with its own type too. */
export const RELAY_MESSAGE_TYPES = [
  "welcome", "call", "cancel", "connections", "scope", "ping", "drain", "done",
  "permissions-query", "error",
] as const;

/**
 * The way in a call came (issue 28): `connector`, an agent host through the
 * relay; `chat`, the chat in the tab with the person's own key; `local`, an
 * agent on the person's machine. A newer relay may name another: it reads
 * as a string.
 */
export type ConnectionKind = "connector" | "chat" | "local" | (string & {});

/** Who calls: one approved agent host (§7 `call`), or the tab's own chat. */
export interface Connection {
  id: string;
  kind: ConnectionKind;
  /** The OAuth client's name, as it registered. */
  client: string;
  /** The host of the client's redirect URI. */
  host: string;
}

/** One picture or sound clip of a result: standard base64 bytes. */
export interface Media {
  mimeType: string;
  data: string;
}

/** An embedded resource of a result (§6 `result`). */
export interface EmbeddedResource {
  uri: string;
  mimeType?: string;
  text?: string;
  blob?: string;
}

/** One of the app's own sentences (§6 `result`): {0}, {1}… in text stand for names, marked as data by the relay. */
export interface Note {
  text: string;
  names?: string[];
}

/** What a tool answers, as the `result` message carries it (§6). */
export interface TabResult {
  data?: unknown;
  images?: Media[];
  /** Set when the tool failed: the app's sentence for the agent, sent as data (it may quote data). */
  error?: string;
  audio?: Media[];
  resources?: EmbeddedResource[];
  /** The app's own sentences, written after the data (notes.ts). */
  notes?: Note[];
  /** Marks a failure whose notes say why, with no error to send as data. */
  isError?: boolean;
}

/** Syslog level names a `log` line may carry (§6). */
export type LogLevel =
  | "debug" | "info" | "notice" | "warning" | "error" | "critical" | "alert" | "emergency";

/** What the person's settings make of a tool for one connection (§6 `permissions`). */
export type Permission = "asks" | "runs" | "refused";

// Messages the tab sends.

export interface Hello {
  type: "hello";
  protocol: number;
  secret: string;
  tabId: string;
  bundle: string;
  focusedAt?: number;
  reconnects?: number;
}

export type TabMessage =
  | Hello
  | { type: "focus"; at: number }
  | { type: "result"; id: string; result: TabResult }
  | { type: "asking" | "answered"; id: string }
  | { type: "step"; by: string }
  | { type: "progress"; id: string; progress: number; total?: number; message?: string }
  | { type: "log"; id: string; level: LogLevel; data: unknown }
  | { type: "permissions"; id: string; tools: Record<string, Permission> }
  | { type: "permissions-changed" }
  | { type: "pong" }
  | RequestMessage;

/** The tab's requests with ref (§6): the person's answers to connect codes, and their connections. */
export type RequestMessage = { type: "connect-info" | "approve" | "decline" | "list-connections" | "forget" | "set-scope"; ref: string } & Record<string, unknown>;

/** Why the relay no longer waits for a call on this socket (§7 `cancel`). */
export type CancelReason = "cancelled" | "timeout" | "answered";

// The messages the relay sends are frames.ts': each frame is read there
// once, field by field, into a typed message.

/** connectionOf reads a message's `connection` field; a missing part is "". */
export function connectionOf(v: unknown): Connection {
  const c = record(v);
  return { id: text(c["id"]), kind: text(c["kind"]), client: text(c["client"]), host: text(c["host"]) };
}

/** parseJSON reads JSON text: undefined when it is not JSON. */
export function parseJSON(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** record returns v when it is an object, else an empty one: its fields are then read with text and num. */
export const record = (v: unknown): Record<string, unknown> => (isRecord(v) ? v : {});

/** text reads a string field: anything else reads as "". */
export const text = (v: unknown): string => (typeof v === "string" ? v : "");

/** num reads a number field: anything else (NaN, Infinity too) reads as 0. */
export const num = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);

/**
 * overBytes reports whether text is over limit UTF-8 bytes, what the
 * relay's limits count. A UTF-16 unit is at most 3 bytes, so a text of
 * `units` units (or one bounded by them: the frame it came in) that could
 * not be over is not measured, nor is text() made.
 */
export function overBytes(units: number, limit: number, text: () => string): boolean {
  return units * 3 > limit && utf8Bytes(text()) > limit;
}

/** The UTF-8 size of s. */
function utf8Bytes(s: string): number {
  let bytes = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x800 && (c < 0xd800 || c > 0xdfff)) bytes += 2;
    else if (c >= 0x80 && c < 0x800) bytes += 1;
    // A surrogate pair is 2 units and 4 bytes: 1 more per unit, and
    // a lone surrogate becomes U+FFFD (3 bytes), close enough for a limit.
    else if (c >= 0xd800 && c <= 0xdfff) bytes += 1;
  }
  return bytes;
}
