// The connection's status in words, for the page's status line: every
// state the SDK's client can be in, said so that the person knows what
// happens and what to do.

import type { Status } from "@tabrelay/tab";

/** statusWords says a status as a sentence; now is Unix ms (for a reconnect's wait). */
export function statusWords(s: Status, now: number = Date.now()): string {
  switch (s.state) {
    case "idle":
      return "Not connected to the relay yet.";
    case "connecting":
      return "Connecting to the relay…";
    case "connected":
      return "Connected to the relay: agents you approved can use this board.";
    case "reconnecting": {
      const seconds = Math.max(0, Math.ceil((s.retryAt - now) / 1000));
      const lost = s.code === 1006 ? "The connection to the relay broke" : `The relay ended the connection (code ${s.code})`;
      return `${lost}; trying again ${seconds > 0 ? `in ${seconds} s` : "now"}. If this goes on, the relay may be down or may not allow this page's address.`;
    }
    case "stopped":
      return `Not connected: ${s.message}`;
  }
}
