// The agent loop (seed 000 "The chat bar"): one message of the person is
// one turn — model call → the model's tool calls, one after the other in
// its order, through the one tool call → results → … — with Stop, a token
// budget checked before each model call and each retry, a busy or
// rate-limited provider waited out, and a conversation too long for the
// model's window summarised once by the same model (a new epoch). Every
// call, failed, stopped or summarising, is counted in the tokens.

import type { JsonObject } from "../schema.js";
import { ASK_PERSON, ASKED, askOf, type Ask } from "./ask.js";
import {
  ProviderFailure, type AssistantPart, type ModelReply, type Provider, type Usage, type WireMessage,
} from "./contract.js";
import { wireOf, type Conversation, type ResultEntry } from "./conversation.js";

/** A tool call of the model, as the loop hands it to the one tool call. */
export interface LoopCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: JsonObject;
  readonly turn: string;
  readonly signal: AbortSignal;
}

export interface LoopOptions {
  readonly provider: Provider;
  /** The key for the provider; undefined when the person has entered none. */
  readonly key: () => string | undefined;
  readonly model: string;
  readonly system: string;
  /** The most output tokens of one model call. */
  readonly maxTokens: number;
  /** The most tokens one turn may spend, checked before each model call and each retry. */
  readonly budget: number;
  /** The model's window in tokens, when known: a conversation that would not fit is summarised at the start of a turn. */
  readonly contextTokens?: number | undefined;
  /** runTool runs one call through the one tool call and returns its result. */
  readonly runTool: (call: LoopCall) => Promise<ResultEntry>;
  /** Whether the person's switch "names and summaries only" is on now. */
  readonly summariesOnly: () => boolean;
  /** The person's settings and instructions as the model is told them; told again when they change. */
  readonly context: () => string;
  /** wait resolves after ms, or rejects when signal fires. */
  readonly wait: (ms: number, signal: AbortSignal) => Promise<void>;
  readonly onChange?: () => void;
  readonly onText?: (delta: string) => void;
  /** The turn's id; a fresh one by default. */
  readonly turn?: string;
}

/** How a turn ended. */
export type TurnEnd =
  | { readonly kind: "done" }
  | { readonly kind: "ask"; readonly ask: Ask }
  | { readonly kind: "stopped" }
  | { readonly kind: "limit" }
  | { readonly kind: "failed"; readonly failure: ProviderFailure };

/** Tries of a waited-out failure (rate, busy, network) before the turn gives up. */
export const RETRIES = 4;
const MAX_WAIT_MS = 60_000;

const SUMMARISE = "Summarise this conversation for yourself, to go on from it in a new context window: the person's requests, what was done with which tools and what they answered (names and counts, not long data), what is pending. Do not call tools. Write only the summary.";

let turnSeq = 0;

/** runTurn runs one turn of the person's message text. signal is the turn's Stop. */
export async function runTurn(c: Conversation, text: string, o: LoopOptions, signal: AbortSignal): Promise<TurnEnd> {
  const turn = o.turn ?? `turn-${Date.now().toString(36)}-${++turnSeq}`;
  const spent: Usage = { input: 0, output: 0 };
  const t = new Turn(c, o, turn, spent, signal);
  const end = await t.run(text).catch((err: unknown) => {
    if (signal.aborted) return { kind: "stopped" } as const;
    const failure = err instanceof ProviderFailure ? err : new ProviderFailure("request", err instanceof Error ? err.message : String(err));
    return { kind: "failed", failure } as const;
  });
  if (end.kind === "stopped") c.add({ role: "note", turn, note: { kind: "stopped" } });
  if (end.kind === "failed") c.add({ role: "note", turn, note: { kind: "error", failure: end.failure.kind, detail: end.failure.message } });
  if (end.kind === "limit") c.add({ role: "note", turn, note: { kind: "limit", budget: o.budget } });
  if (end.kind === "ask") c.add({ role: "note", turn, note: { kind: "ask", ask: end.ask } });
  o.onChange?.();
  return end;
}

class Turn {
  private summarised = false;
  /** The input tokens of the last model call: the next one sends at least as many. */
  private lastInput = 0;

  constructor(
    private readonly c: Conversation, private readonly o: LoopOptions, private readonly turn: string,
    private readonly spent: Usage, private readonly signal: AbortSignal,
  ) {}

  async run(text: string): Promise<TurnEnd> {
    const c = this.c, o = this.o;
    if (o.contextTokens && this.estimate(text) > o.contextTokens - o.maxTokens && c.entries.length > c.from) await this.summarise();
    const context = o.context();
    const told = context !== c.toldContext;
    c.toldContext = context;
    c.add({ role: "user", turn: this.turn, text, at: Date.now(), ...(told && context ? { context } : {}) });
    o.onChange?.();
    for (;;) {
      const reply = await this.call();
      if (reply === "limit") return { kind: "limit" };
      const calls = reply.parts.filter((p): p is Extract<AssistantPart, { type: "call" }> => p.type === "call");
      // Stopped meanwhile (a provider that did not heed the signal), its calls are still answered, unrun: a call without a result breaks the conversation.
      if (!calls.length) return { kind: this.signal.aborted ? "stopped" : "done" };
      const { results, ask } = await this.runCalls(calls);
      c.add({ role: "tool", turn: this.turn, results });
      o.onChange?.();
      if (this.signal.aborted) return { kind: "stopped" };
      if (ask) return { kind: "ask", ask };
    }
  }

  /** estimate is the tokens the next call would send: the last call's input and output, and the new text (4 characters a token). */
  private estimate(text: string): number {
    return this.c.lastCall + Math.ceil(text.length / 4);
  }

  /** call makes one model call of the turn, with the budget, the retries and the summary; it adds the reply. */
  private async call(): Promise<ModelReply | "limit"> {
    const o = this.o;
    let unreadable = 0;
    for (let attempt = 0; ; attempt++) {
      if (this.signal.aborted) throw this.signal.reason;
      if (this.over()) return "limit";
      const { messages, sent } = wireOf(this.c, o.summariesOnly());
      try {
        const reply = await this.send(messages, o.system, this.c.tools);
        this.c.add({ role: "assistant", turn: this.turn, parts: reply.parts, at: Date.now(), model: o.model, sent });
        o.onChange?.();
        return reply;
      } catch (err) {
        if (this.signal.aborted || !(err instanceof ProviderFailure)) throw err;
        if (err.kind === "too-long" && !this.summarised) {
          await this.summarise();
          continue;
        }
        if (err.kind === "unreadable" && unreadable++ === 0) continue;
        if (!["rate", "busy", "network"].includes(err.kind) || attempt >= RETRIES) throw err;
        if (this.over()) return "limit";
        await o.wait(Math.min(err.retryAfterMs ?? 1000 * 2 ** attempt, MAX_WAIT_MS), this.signal);
      }
    }
  }

  /** over says whether the next model call would pass the turn's budget: it sends at least the last call's input. */
  private over(): boolean {
    return this.spent.input + this.spent.output + this.lastInput > this.o.budget;
  }

  /** send makes one model call and counts its tokens, whatever its end. */
  private async send(messages: WireMessage[], system: string, tools: Conversation["tools"]): Promise<ModelReply> {
    const usage: Usage = { input: 0, output: 0 };
    const o = this.o;
    const key = o.key();
    if (key === undefined && o.provider.origin !== "null") throw new ProviderFailure("auth", "no key entered");
    try {
      return await o.provider.send(
        { model: o.model, system, messages, tools, maxTokens: o.maxTokens, signal: this.signal, usage, onText: o.onText },
        key ?? "",
      );
    } finally {
      // A call that counted nothing (refused before the model read it, or stopped) leaves the last size as it was.
      if (usage.input + usage.output > 0) (this.lastInput = usage.input), (this.c.lastCall = usage.input + usage.output);
      for (const u of [this.spent, this.c.tokens]) (u.input += usage.input), (u.output += usage.output);
      o.onChange?.();
    }
  }

  /** summarise asks the same model for a summary of the conversation so far and starts a new epoch with it (once a turn). */
  private async summarise(): Promise<void> {
    this.summarised = true;
    const { messages } = wireOf(this.c, this.o.summariesOnly());
    const reply = await this.send([...messages, { role: "user", text: SUMMARISE }], this.o.system, this.c.tools);
    const summary = reply.parts.map((p) => (p.type === "text" ? p.text : "")).join("").trim();
    if (!summary) throw new ProviderFailure("too-long", "the summary came back empty");
    this.c.startEpoch(summary);
    this.c.add({ role: "note", turn: this.turn, note: { kind: "summary" } });
  }

  /** runCalls runs the model's calls one after the other; ask_person ends the turn, Stop answers the rest. */
  private async runCalls(calls: Extract<AssistantPart, { type: "call" }>[]): Promise<{ results: ResultEntry[]; ask?: Ask }> {
    const results: ResultEntry[] = [];
    let ask: Ask | undefined;
    const plain = (call: { id: string; name: string }, text: string, isError: boolean): ResultEntry =>
      ({ id: call.id, name: call.name, text, isError, cells: false, keptOut: false });
    for (const call of calls) {
      if (this.signal.aborted) results.push(plain(call, "The person stopped this turn; this call was not run.", true));
      else if (ask) results.push(plain(call, "Not run: the turn ended with a question to the person.", true));
      else if (call.name === ASK_PERSON) {
        const a = askOf(call.arguments);
        if (typeof a === "string") results.push(plain(call, a, true));
        else (ask = a), results.push(plain(call, ASKED, false));
      } else {
        results.push(await this.o.runTool({ id: call.id, name: call.name, arguments: call.arguments, turn: this.turn, signal: this.signal }));
      }
    }
    return ask ? { results, ask } : { results };
  }
}
