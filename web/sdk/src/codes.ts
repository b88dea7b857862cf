// The relay's close codes (docs/tab-protocol.md §16) in one table, with
// what the tab does on each. It mirrors protocol/disconnect.go;
// test/protocol-agreement.test.ts fails when they drift apart.

/** Why the client stopped for good: each needs the app, not a retry. */
export type StopReason =
  | "bad-secret"
  | "unsupported-protocol"
  | "forgotten"
  | "bad-message"
  | "too-big"
  | "no-storage"
  | "refused"
  | "bad-relay-url"
  | "stopped";

/** The codes after which connecting again would get the same answer. */
export const STOP_CODES: Readonly<Record<number, StopReason>> = {
  4100: "bad-secret",
  4101: "unsupported-protocol",
  4102: "forgotten",
  4103: "bad-message",
  1009: "too-big",
};

/** The reconnect range, by name (the labels of the relay's metric). */
export const RECONNECT_CODES: Readonly<Record<number, string>> = {
  4000: "shutdown",
  4001: "slow",
  4002: "no_hello",
  4003: "ping_timeout",
  4004: "too_fast",
  4005: "too_many_tabs",
  4006: "internal",
  4007: "unavailable",
  4008: "replaced",
};

/** A newer socket with this tab's id took over (§15, §16 4008). */
export const CLOSE_REPLACED = 4008;

/**
 * stopReasonOf returns the stop reason of a close code, or undefined when
 * the tab should reconnect. The rest of 4100–4199, codes a newer relay may
 * send, means stop too (§16: the whole range). Codes outside both ranges
 * (1001, 1006, network errors) mean reconnect.
 */
export function stopReasonOf(code: number): StopReason | undefined {
  if (STOP_CODES[code]) return STOP_CODES[code];
  return code >= 4100 && code <= 4199 ? "refused" : undefined;
}

/** The sentence an app can show the person for each stop. */
export const STOP_MESSAGES: Readonly<Record<StopReason, string>> = {
  "bad-secret": "The relay did not accept this browser's key. Reload the page; if it happens again, the app needs an update.",
  "unsupported-protocol": "This page is older or newer than the relay. Reload the page.",
  "forgotten": "This browser was disconnected from the relay. Reload the page to connect it again; agents must be approved again.",
  "bad-message": "The relay refused a message from this page. Reload the page.",
  "too-big": "The relay refused a message from this page as too big. Reload the page.",
  "refused": "The relay refused this page for good. Reload the page; if it happens again, the app needs an update.",
  "no-storage": "This browser keeps no site data for this page, so agents cannot reach it. Allow site data (storage) and reload.",
  "bad-relay-url": "The relay's address is not a valid http(s) or ws(s) URL.",
  "stopped": "The page stopped its connection to the relay.",
};
