// The relay's messages (docs/tab-protocol.md §4), each read once from its
// text frame into a typed message: a field of the wrong type reads as
// absent (its stated default), a message that cannot be acted on without
// a field reads as Unreadable, with the sentence the client warns with.
// Nothing after parseFrame reads the raw JSON.

import { connectionOf, isRecord, loose, num, parseJSON, text, type CancelReason, type Connection } from "./protocol.js";
import { connectInfoOf, connectionInfoOf, type ConnectInfo, type ConnectionInfo } from "./requests.js";
import type { WireCall, WireCancel, WireConnectInfo, WireConnections, WireDone, WireDrain, WireError, WirePermissionsQuery, WireWelcome } from "./wire.js";

export interface WelcomeMessage {
  type: "welcome";
  pairing: string;
  /** Absent when the relay sent none that is a positive number. */
  pingIntervalMs: number | undefined;
  maxMessageBytes: number | undefined;
}

export interface CallMessage {
  type: "call";
  /** Never empty. */
  id: string;
  /** "" when the relay named no tool as a string. */
  tool: string;
  /** null when the arguments are not a JSON object (absent reads as {}). */
  arguments: Record<string, unknown> | null;
  connection: Connection;
  turn: string;
  deadline: number;
  redelivery: number;
}

export interface CancelMessage {
  type: "cancel";
  id: string;
  /** A CancelReason from this relay; a newer one may say more. */
  reason: CancelReason | (string & {});
}

export interface PermissionsQueryMessage {
  type: "permissions-query";
  id: string;
  tools: string[];
  connection: Connection;
}

export interface DrainMessage {
  type: "drain";
  /** 0 when absent. */
  reconnectAfterMs: number;
}

/** The relay refused a request of the tab (with its ref) or a message (without). */
export interface ErrorMessage {
  type: "error";
  ref: string | undefined;
  /** "unknown" when the relay gave none. */
  code: string;
  /** "" when the relay gave none. */
  message: string;
}

/** The answer to approve, decline, forget or set-scope. */
export interface DoneMessage {
  type: "done";
  ref: string | undefined;
  /** approve (typed) and set-scope: the connection as it is now. */
  connection: ConnectionInfo;
  /** approve (link): the relay's confirm page; "" from a relay older than link approvals. */
  confirm: string;
}

/** The answer to list-connections (with ref), or a push (without). */
export interface ConnectionsMessage {
  type: "connections";
  ref: string | undefined;
  /** undefined when the message holds no list. */
  connections: ConnectionInfo[] | undefined;
}

export interface ConnectInfoMessage {
  type: "connect-info";
  ref: string | undefined;
  info: ConnectInfo;
}

/** A frame the client cannot act on; why is the sentence it warns with (once). */
export interface UnreadableFrame {
  type: "unreadable";
  why: string;
}

/** The answers to the tab's requests with ref (§7). */
export type Answer = DoneMessage | ConnectionsMessage | ConnectInfoMessage;

/** Every message the relay sends, as the client reads it. */
export type RelayMessage =
  | WelcomeMessage | CallMessage | CancelMessage | PermissionsQueryMessage | DrainMessage | ErrorMessage | Answer
  | { type: "ping" } | { type: "scope" } | UnreadableFrame;

const ref = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
/** positive reads a positive number; anything else is undefined. */
const positive = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) && v > 0 ? v : undefined);

/** parseFrame reads one text frame from the relay. */
export function parseFrame(frame: string): RelayMessage {
  const m = parseJSON(frame);
  if (!isRecord(m) || typeof m["type"] !== "string") return unreadable("a frame from the relay that is not a JSON message was ignored");
  const type = m["type"];
  const id = text(m["id"]);
  // A call, cancel or permissions-query is about one call or query: without its id there is nothing to do.
  if ((type === "call" || type === "cancel" || type === "permissions-query") && !id) {
    return unreadable(`a "${type}" without an id was ignored`);
  }
  switch (type) {
    case "welcome": {
      const w = loose<WireWelcome>(m);
      return { type, pairing: text(w.pairing), pingIntervalMs: positive(w.pingIntervalMs), maxMessageBytes: positive(w.maxMessageBytes) };
    }
    case "ping": case "scope":
      return { type };
    case "call": {
      const c = loose<WireCall>(m);
      const args = c.arguments ?? {};
      return {
        type, id, tool: text(c.tool), arguments: isRecord(args) ? args : null, connection: connectionOf(c.connection),
        turn: text(c.turn), deadline: num(c.deadline), redelivery: num(c.redelivery),
      };
    }
    case "cancel":
      return { type, id, reason: text(loose<WireCancel>(m).reason) || "cancelled" };
    case "permissions-query": {
      const q = loose<WirePermissionsQuery>(m);
      const tools = Array.isArray(q.tools) ? q.tools.filter((t): t is string => typeof t === "string") : [];
      return { type, id, tools, connection: connectionOf(q.connection) };
    }
    case "drain":
      return { type, reconnectAfterMs: positive(loose<WireDrain>(m).reconnectAfterMs) ?? 0 };
    case "error": {
      const e = loose<WireError>(m);
      return { type, ref: ref(e.ref), code: text(e.code) || "unknown", message: text(e.message) };
    }
    case "done": {
      const d = loose<WireDone>(m);
      return { type, ref: ref(d.ref), connection: connectionInfoOf(d.connection), confirm: text(d.confirm) };
    }
    case "connections": {
      const c = loose<WireConnections>(m);
      const list = c.connections;
      // An item that is no connection with an id is left out: the panel could neither name nor forget it.
      const each = Array.isArray(list) ? list.map(connectionInfoOf).filter((c, i) => isRecord(list[i]) && c.id) : undefined;
      return { type, ref: ref(c.ref), connections: each };
    }
    case "connect-info":
      return { type, ref: ref(loose<WireConnectInfo>(m).ref), info: connectInfoOf(m) };
  }
  return unreadable(`a relay message of unknown type "${type.slice(0, 80)}" was ignored`);
}

const unreadable = (why: string): UnreadableFrame => ({ type: "unreadable", why });
