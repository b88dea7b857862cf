// A conversation of the chat (seed 000 "The chat bar", Conversation):
// append only — nothing sent to a model is edited afterwards (reasoning
// and prompt caches are bound to the prefix); a summary starts a new
// epoch instead. wireOf is what the next model call sends of it.

import { chatWords, type ChatMessages, type FailureKind } from "../chat-messages.js";
import type { Media } from "../protocol.js";
import type { Ask } from "./ask.js";
import type { AssistantPart, ChatTool, ToolOutcome, Usage, WireMessage } from "./contract.js";

/** One tool result as the conversation keeps it, with the marks its call set. */
export interface ResultEntry extends ToolOutcome {
  /** The result could hold what the switch "names and summaries only" keeps out: its tool is cell-level or unclassified, or it came with the switch off and holds pictures or single-cell fields. */
  readonly cells: boolean;
  /** Values or pictures were kept out of it (the person's switch "names and summaries only"). */
  readonly keptOut: boolean;
}

/** What one model call sent: the results in it, the pictures, and the results withheld or kept out. */
export interface Sent {
  readonly results: number;
  readonly pictures: number;
  readonly keptOut: number;
}

export type Entry =
  | { readonly role: "user"; readonly turn: string; readonly text: string; readonly at: number; readonly context?: string }
  | { readonly role: "assistant"; readonly turn: string; readonly parts: readonly AssistantPart[]; readonly at: number; readonly model: string; readonly sent: Sent }
  | { readonly role: "tool"; readonly turn: string; readonly results: readonly ResultEntry[] }
  | { readonly role: "note"; readonly turn: string; readonly note: Note };

/** A note under a turn, for the person (never sent to a model): said in the table's language when shown. */
export type Note =
  | { readonly kind: "stopped" | "summary" }
  | { readonly kind: "limit"; readonly budget: number }
  | { readonly kind: "error"; readonly failure: FailureKind; readonly detail: string }
  | { readonly kind: "ask"; readonly ask: Ask };

/** noteText says a note in the table w's words. */
export function noteText(n: Note, w: ChatMessages = chatWords()): string {
  switch (n.kind) {
    case "stopped":
      return w.stopped;
    case "summary":
      return w.summarised;
    case "limit":
      return w.limit(n.budget);
    case "error":
      return w.failureDetail(w.failure[n.failure], n.detail);
    case "ask":
      return n.ask.question;
  }
}

/** The sentence a result withheld under the switch reads as when the conversation is sent again. */
export const WITHHELD = "This result was withheld: the person set this app so that agents see names and summaries only, and it could hold cell values or pictures.";

export class Conversation {
  readonly entries: Entry[] = [];
  /** The epoch (1 + how often it was summarised), its summary, and where it starts in entries. */
  epoch = 1;
  summary = "";
  from = 0;
  /** Every token of every call, failed, stopped or summarising included. */
  readonly tokens: Usage = { input: 0, output: 0 };
  /** The tokens of the last model call (input and output): the next one sends at least as many. */
  lastCall = 0;
  /** The context the model was last told (the person's settings and instructions). */
  toldContext = "";

  constructor(
    readonly id: string,
    /** The tools, fixed for the conversation: a model's reasoning is bound to the tools it was given. */
    readonly tools: readonly ChatTool[],
    readonly createdAt = Date.now(),
  ) {}

  add(e: Entry): void {
    this.entries.push(e);
  }

  /** startEpoch ends the epoch with a summary: what follows is sent after it, the earlier entries never again. */
  startEpoch(summary: string): void {
    this.epoch++;
    this.summary = summary;
    this.from = this.entries.length;
  }
}

/** wireOf returns the messages the next model call sends, and what they carry. */
export function wireOf(c: Conversation, summariesOnly: boolean): { messages: WireMessage[]; sent: Sent } {
  const messages: WireMessage[] = [];
  let results = 0, pictures = 0, keptOut = 0;
  if (c.summary) messages.push({ role: "user", text: `A summary of the conversation so far, written when it grew too long for the model:\n\n${c.summary}` });
  for (const e of c.entries.slice(c.from)) {
    if (e.role === "user") messages.push({ role: "user", text: e.context ? `${e.context}\n\n${e.text}` : e.text });
    else if (e.role === "assistant") messages.push({ role: "assistant", parts: e.parts });
    else if (e.role === "tool") {
      messages.push({
        role: "tool",
        results: e.results.map((r) => {
          results++;
          if (r.keptOut || (summariesOnly && r.cells)) {
            keptOut++;
            return { id: r.id, name: r.name, text: r.keptOut ? r.text : WITHHELD, isError: r.isError };
          }
          pictures += r.images?.length ?? 0;
          return r;
        }),
      });
    }
  }
  return { messages, sent: { results, pictures, keptOut } };
}

/** sentLine says what left the browser in a turn: from its last model call's marks. */
export function sentLine(c: Conversation, turn: string, provider: string): string {
  const last = c.entries.filter((e) => e.role === "assistant" && e.turn === turn).pop();
  if (!last || last.role !== "assistant") return "";
  const { results, pictures, keptOut } = last.sent;
  return chatWords().sent(provider, results, pictures, keptOut);
}

/** picturesOf returns a result's pictures, for a result entry built from an encoded result. */
export function picturesOf(images: readonly Media[]): { images?: readonly Media[] } {
  return images.length ? { images } : {};
}
