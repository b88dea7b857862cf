// The relay's close codes (docs/tab-protocol.md §16) and what the tab
// does on each. The codes themselves are close-codes.ts, generated from
// protocol/disconnect.go's table (go generate ./protocol).

import { STOP_CODES, type CloseStopReason } from "./close-codes.js";

/** Why the client stopped for good: each needs the app, not a retry. */
export type StopReason = CloseStopReason | "no-storage" | "refused" | "bad-relay-url" | "stopped";

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
