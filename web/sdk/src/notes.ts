// The app's own sentences for the agent (docs/tab-protocol.md §6
// `result`, `notes`): the relay writes them after the closing data tag,
// each {n} replaced by names[n] marked as data. A sentence that quotes a
// name written by others (a client's name, a board's title) passes it in
// names, never in text; the app's own words (a tool's title) stay in text,
// in typographic quotes.

import type { Note, TabResult } from "./protocol.js";

/** note is one of the app's own sentences: {0}, {1}… in text stand for names, which the relay marks as data. */
export function note(text: string, ...names: string[]): Note {
  return names.length ? { text, names } : { text };
}

/** refusal is a failed result whose only words are the app's own sentence: a refusal, a question declined. */
export function refusal(text: string, ...names: string[]): TabResult {
  return { isError: true, notes: [note(text, ...names)] };
}

/** withNote returns result with one more note after its others (what was left out of it, say). */
export function withNote(result: TabResult, text: string, ...names: string[]): TabResult {
  return { ...result, notes: [...(result.notes ?? []), note(text, ...names)] };
}

/** noteText is a note as plain text, names quoted as JSON: for a log line or a test, not for the agent. */
export function noteText(n: Note): string {
  return n.text.replace(/\{(\d)\}/g, (all, i: string) => {
    const name = n.names?.[Number(i)];
    return name === undefined ? all : JSON.stringify(name);
  });
}
