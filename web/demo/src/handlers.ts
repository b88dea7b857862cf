// The handlers of the tools tools.ts declares: each takes a ToolCall from
// the SDK, checks its arguments, acts on the board and answers data, a
// Reply, or a ToolError the agent reads. The DOM parts (the picture, the
// page's address) come in as functions, so tests run them in node with a
// fake ToolCall.

import { Reply, ToolError, type Handlers, type ToolCall } from "@tabrelay/tab";
import { NoteError, summaryOf, type Board, type Note } from "./notes.js";
import { search, type SearchOptions } from "./search.js";
import type { NotesApp } from "./tools.js";
import type { AgentChanges } from "./undo.js";

/** What the handlers need besides the board. */
export interface HandlerDeps {
  board: Board;
  /** picture draws the board width pixels wide and returns the PNG's base64. */
  picture(width: number): Promise<string> | string;
  /** pageUrl is the app page's address (without a connect code). */
  pageUrl(): string;
  /** Replaces the thorough search's waits (tests). */
  sleep?: SearchOptions["sleep"];
  /** Keeps what each call changed, for Undo turn. */
  changes?: AgentChanges;
}

/** The default and the limits of list_notes' limit and board_picture's width. */
export const LIST_LIMIT = { default: 50, min: 1, max: 200 } as const;
export const PICTURE_WIDTH = { default: 640, min: 64, max: 1024 } as const;
/** The most characters an export may have: a resource's text the relay passes on (protocol/content.go). */
export const EXPORT_MAX_CHARS = 150_000;

/** makeHandlers returns one handler per declared tool. */
export function makeHandlers(d: HandlerDeps): Handlers<NotesApp> {
  const { board } = d;
  // A step of the agent's turn: the note as it was before, for Undo turn.
  const step = (call: ToolCall, id: string, before: Note | undefined) => {
    d.changes?.record(call.id, id, before);
    call.step();
  };
  return {
    list_notes: (call) => {
      const a = call.arguments;
      return board.list({
        query: optString(a, "query"), tag: optString(a, "tag"), saved: optBoolean(a, "saved"),
        limit: optInteger(a, "limit", LIST_LIMIT) ?? LIST_LIMIT.default,
      }).map(summaryOf);
    },
    read_note: (call) => {
      const id = needString(call.arguments, "id");
      const note = board.get(id);
      if (!note) throw new ToolError(`There is no note with the id ${JSON.stringify(id)}; list_notes gives the ids.`);
      return note;
    },
    write_note: {
      add: (call) => {
        const a = call.arguments;
        const note = words(() => board.add({ title: needString(a, "title"), body: optString(a, "body"), tags: optTags(a) }));
        step(call, note.id, undefined);
        return { id: note.id, title: note.title };
      },
      edit: (call) => {
        const a = call.arguments;
        const id = needString(a, "id");
        const patch = { title: optString(a, "title"), body: optString(a, "body"), tags: optTags(a), saved: optBoolean(a, "saved") };
        if (Object.values(patch).every((v) => v === undefined)) {
          throw new ToolError("Nothing to change: give a title, body, tags or saved.");
        }
        const before = board.get(id);
        const note = words(() => board.edit(id, patch));
        step(call, id, before);
        return { id: note.id, title: note.title };
      },
    },
    delete_note: (call) => {
      const id = needString(call.arguments, "id");
      const before = words(() => board.remove(id));
      step(call, id, before);
      return undefined;
    },
    export_notes: async (call) => {
      const format = optString(call.arguments, "format") ?? "markdown";
      if (format !== "markdown" && format !== "json") throw new ToolError(`format is "markdown" or "json", not ${JSON.stringify(format)}.`);
      const notes = board.all;
      const text = format === "json" ? JSON.stringify(notes, null, 2) + "\n" : markdownOf(notes);
      if (text.length > EXPORT_MAX_CHARS) {
        throw new ToolError(`The export has ${text.length} characters, over the ${EXPORT_MAX_CHARS} a result may carry; read the notes with list_notes and read_note instead.`);
      }
      // The person is asked once the size is known (confirmAt: "handler").
      await call.confirm(`The export is ${sizeWords(utf8Bytes(text))}: ${notes.length} note${notes.length === 1 ? "" : "s"} as ${format === "json" ? "JSON" : "Markdown"}.`);
      const uri = format === "json" ? "notes://export.json" : "notes://export.md";
      const mimeType = format === "json" ? "application/json" : "text/markdown";
      return new Reply({ data: { format, uri, notes: notes.length, characters: text.length }, resources: [{ uri, mimeType, text }] });
    },
    search_notes: async (call) => {
      const query = needString(call.arguments, "query");
      const thorough = optBoolean(call.arguments, "thorough") === true;
      if (!query.trim()) throw new ToolError("query needs at least one word to find.");
      try {
        return await search(board, query, {
          thorough, signal: call.signal, sleep: d.sleep,
          progress: (done, total, message) => call.progress(done, total, message),
        });
      } catch (err) {
        if (call.signal.aborted) throw new ToolError("The search was stopped before it finished.");
        throw err;
      }
    },
    board_picture: async (call) => {
      const width = optInteger(call.arguments, "width", PICTURE_WIDTH) ?? PICTURE_WIDTH.default;
      const png = await d.picture(width);
      return new Reply({ data: { notes: board.all.length, url: d.pageUrl() }, images: [{ mimeType: "image/png", data: png }] });
    },
  };
}

/**
 * markdownOf is the Markdown export: one section per note. The notes' own
 * text has its raw HTML escaped (& and <), so that a viewer that renders
 * the document shows what was written instead of running it.
 */
export function markdownOf(notes: readonly Note[]): string {
  const parts = [`# Notes board\n\n${notes.length} note${notes.length === 1 ? "" : "s"}.\n`];
  for (const n of notes) {
    const facts = [n.saved ? "saved" : "", n.tags.length ? "tags: " + n.tags.join(", ") : "", "updated " + n.updated].filter(Boolean);
    parts.push(`## ${safe(n.title.replace(/\s+/g, " "))}\n\n_${safe(facts.join(" · "))}_ (id ${safe(n.id)})\n\n${safe(n.body)}\n`);
  }
  return parts.join("\n");
}

/** sizeWords says a size in bytes for the person: "850 bytes", "12.3 kB", "2.4 MB". */
export function sizeWords(bytes: number): string {
  if (bytes < 1000) return `${bytes} byte${bytes === 1 ? "" : "s"}`;
  return bytes < 1_000_000 ? `${(bytes / 1000).toFixed(1)} kB` : `${(bytes / 1_000_000).toFixed(1)} MB`;
}

function utf8Bytes(s: string): number {
  return new TextEncoder().encode(s).length;
}

function safe(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;");
}

/** words turns the board's NoteError into the ToolError the agent reads. */
function words<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof NoteError) throw new ToolError(err.message);
    throw err;
  }
}

type Args = ToolCall["arguments"];

function needString(a: Args, name: string): string {
  const v = a[name];
  if (typeof v !== "string") throw new ToolError(`${name} is required: a string.`);
  return v;
}

function optString(a: Args, name: string): string | undefined {
  const v = a[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") throw new ToolError(`${name} is a string.`);
  return v;
}

function optBoolean(a: Args, name: string): boolean | undefined {
  const v = a[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "boolean") throw new ToolError(`${name} is true or false.`);
  return v;
}

function optInteger(a: Args, name: string, range: { readonly min: number; readonly max: number }): number | undefined {
  const v = a[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < range.min || v > range.max) {
    throw new ToolError(`${name} is a whole number from ${range.min} to ${range.max}.`);
  }
  return v;
}

function optTags(a: Args): string[] | undefined {
  const v = a["tags"];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || !v.every((t) => typeof t === "string")) throw new ToolError("tags is a list of strings.");
  return v;
}
