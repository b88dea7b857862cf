// The tab wire protocol's vocabulary (docs/tab-protocol.md). The messages,
// their types and what they carry are protocol/messages.go's, generated
// into wire.ts (go generate ./protocol); this file names the SDK's narrower
// words for some of their fields and the names the SDK's users see (each an
// interface of its own, as before the types were generated: an app may
// augment them).

import type { WireConnection, WireEmbeddedResource, WireMedia, WireNote, WireTabResult } from "./wire.js";

/**
 * The way in a call came (issue 28): `connector`, an agent host through the
 * relay; `chat`, the chat in the tab with the person's own key; `local`, an
 * agent on the person's machine. A newer relay may name another: it reads
 * as a string.
 */
export type ConnectionKind = "connector" | "chat" | "local" | (string & {});

/** Who calls: one approved agent host (§7 `call`), or the tab's own chat. */
export interface Connection extends WireConnection {}

/** One picture or sound clip of a result: standard base64 bytes. */
export interface Media extends WireMedia {}

/** An embedded resource of a result (§6 `result`). */
export interface EmbeddedResource extends WireEmbeddedResource {}

/** One of the app's own sentences (§6 `result`): {0}, {1}… in text stand for names, marked as data by the relay. */
export interface Note extends WireNote {}

/** What a tool answers, as the `result` message carries it (§6). */
export interface TabResult extends WireTabResult {}

/** Syslog level names a `log` line may carry (§6). */
export type LogLevel =
  | "debug" | "info" | "notice" | "warning" | "error" | "critical" | "alert" | "emergency";

/** What the person's settings make of a tool for one connection (§6 `permissions`). */
export type Permission = "asks" | "runs" | "refused";

/** Why the relay no longer waits for a call on this socket (§7 `cancel`). */
export type CancelReason = "cancelled" | "timeout" | "answered";

// The messages the relay sends are frames.ts': each frame is read there
// once, field by field, into a typed message.

/**
 * Loose is a relay's message, or a part of one, as a frame may hold it:
 * each field of the wire type may be missing or of any JSON type. A reader
 * reads its fields by the wire type's names, so tsc fails when the relay's
 * names change.
 */
export type Loose<T> = { readonly [K in keyof T]?: unknown };

/** loose reads v as a Loose T: v when it is an object, else an empty one. */
export const loose = <T>(v: unknown): Loose<T> => record(v) as Loose<T>;

/** connectionOf reads a message's `connection` field; a missing part is "". */
export function connectionOf(v: unknown): Connection {
  const c = loose<WireConnection>(v);
  return { id: text(c.id), kind: text(c.kind), client: text(c.client), host: text(c.host) };
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
