// The agents' turns as the person sees them (seed 000 "The activity
// line"; docs/tab-protocol.md §12): one line per turn — who, how many
// steps, what now — and Stop, which ends the turn's pending calls with a
// sentence the agent reads; each step a call reports (ToolCall.step) is
// recorded with its connection and turn, so that an app that can undo a
// turn (onUndoTurn) gets Undo turn on the line once the turn is done.
// Headless: <tabrelay-activity> renders it.

import { refusal, type Connection, type TabResult, type ToolCall } from "../index.js";
import { messages } from "./messages.js";

/** One agent turn, as its activity line shows it. */
export interface TurnLine {
  /** The connection and the turn: what stop and dismiss take. */
  readonly key: string;
  readonly turn: string;
  readonly connection: Connection;
  /** Who acts: "Claude (claude.ai)". */
  readonly who: string;
  /** Calls finished in this turn, and the changes they reported (ToolCall.step). */
  readonly calls: number;
  readonly steps: number;
  /**
   * acting: a call runs; asking: one waits for the person; done: none
   * pending; stopped: the person pressed Stop; undone: the person pressed
   * Undo turn and the app took its steps back.
   */
  readonly state: "acting" | "asking" | "done" | "stopped" | "undone";
  /** The app can take this turn's steps back now (Undo turn): it is over, made steps, and the app registered onUndoTurn. */
  readonly undoable: boolean;
  /** The title of the call running now ("" when none). */
  readonly now: string;
  /** The line as a sentence: "Claude (claude.ai) · 2 steps · now: Rename note". */
  readonly text: string;
}

/** One step a call reported (ToolCall.step), as its turn records it. */
export interface StepRecord {
  /** The call's id: an app that keeps its own history per call finds the step's entry by it. */
  readonly call: string;
  readonly tool: string;
  readonly action: string | undefined;
  /** The call's title, as the line shows it. */
  readonly title: string;
}

/** A turn as an app's undo gets it: whose, and every step its calls reported, in order. */
export interface TurnRecord {
  readonly key: string;
  readonly turn: string;
  readonly connection: Connection;
  readonly steps: readonly StepRecord[];
}

/** An app's undo of a turn: it takes the turn's steps back, or throws a sentence saying why it could not. */
export type UndoTurn = (turn: TurnRecord) => void | Promise<void>;

interface Entry {
  turn: string;
  connection: Connection;
  calls: number;
  steps: StepRecord[];
  stopped: boolean;
  /** undone: taken back; undoing: the app's undo runs; failed: why it could not. */
  undo: "" | "undoing" | "undone" | { failed: string };
  running: Map<string, { title: string; asking: boolean; stop: AbortController }>;
}

/** TurnStopped is a call's signal reason when the person stopped its turn. */
export class TurnStopped extends Error {
  override name = "AbortError";
  constructor() {
    super("The person stopped the agent's turn.");
  }
}

/** whoOf names a connection: its client and host, else unnamed (the agent's refusals keep the English one). */
export function whoOf(c: Connection, unnamed = "An agent"): string {
  return c.client && c.host ? `${c.client} (${c.host})` : c.client || c.host || unnamed;
}

export class Turns {
  private readonly entries = new Map<string, Entry>();
  private readonly listeners = new Set<(lines: readonly TurnLine[]) => void>();
  private readonly stopListeners = new Set<() => void>();
  private undoTurn: UndoTurn | undefined;
  /** The stopped turns whose calls are refused until the relay starts the connection's next turn: key → connection id. */
  private readonly stoppedKeys = new Map<string, string>();

  /** The lines now, oldest turn first. */
  get lines(): readonly TurnLine[] {
    return [...this.entries].map(([key, e]) => lineOf(key, e, this.undoable(e)));
  }

  /** onChange calls listener with the lines at every change; it returns the unsubscribe. */
  onChange(listener: (lines: readonly TurnLine[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * onStop calls listener each time the person stops or undoes a turn: the
   * client then sends the relay a step by the person, which ends the turn (§12).
   */
  onStop(listener: () => void): () => void {
    this.stopListeners.add(listener);
    return () => this.stopListeners.delete(listener);
  }

  /**
   * stop ends a turn: its pending calls are answered with a sentence, their
   * signals fire, the relay is told (onStop), and the turn's calls that
   * still arrive before the relay's next turn of that connection are refused.
   */
  stop(key: string): void {
    const e = this.entries.get(key);
    if (!e || e.stopped) return;
    e.stopped = true;
    this.stoppedKeys.set(key, e.connection.id);
    for (const r of e.running.values()) r.stop.abort(new TurnStopped());
    for (const l of [...this.stopListeners]) this.call(l);
    this.emit();
  }

  /**
   * onUndoTurn registers the app's undo of a turn: with it, a turn over
   * with steps offers Undo turn. One at a time; it returns the unregister.
   */
  onUndoTurn(undo: UndoTurn): () => void {
    this.undoTurn = undo;
    this.emit();
    return () => {
      if (this.undoTurn === undo) (this.undoTurn = undefined), this.emit();
    };
  }

  /**
   * undo takes a turn back (Undo turn): the app's undo gets its record, and
   * the relay is told the person changed something (onStop), which ends the
   * agent's turn. If the undo throws, the line says why.
   */
  async undo(key: string): Promise<void> {
    const e = this.entries.get(key);
    const undo = this.undoTurn;
    if (!e || !undo || !this.undoable(e)) return;
    e.undo = "undoing";
    this.emit();
    try {
      await undo({ key, turn: e.turn, connection: e.connection, steps: [...e.steps] });
      e.undo = "undone";
      for (const l of [...this.stopListeners]) this.call(l);
    } catch (err) {
      e.undo = { failed: err instanceof Error ? err.message : String(err) };
    }
    this.emit();
  }

  private undoable(e: Entry): boolean {
    return this.undoTurn !== undefined && e.running.size === 0 && e.steps.length > 0 && (e.undo === "" || typeof e.undo === "object");
  }

  /** dismiss removes the line of a turn with no pending call. */
  dismiss(key: string): void {
    const e = this.entries.get(key);
    if (e && e.running.size === 0 && this.entries.delete(key)) this.emit();
  }

  /**
   * track runs one call as part of its turn: run gets a copy of the call
   * whose signal also fires on Stop and whose asking, answered and step
   * show on the line. It resolves with run's result, or the Stop sentence.
   */
  async track(call: ToolCall, title: string, run: (call: ToolCall) => Promise<TabResult>): Promise<TabResult> {
    const key = `${call.connection.id} ${call.turn}`;
    let e = this.entries.get(key);
    if (!e) {
      const stopped = this.stoppedKeys.has(key);
      if (!stopped) {
        // A connection's new turn replaces its old line once that is done
        // (one the person may still undo stays until dismissed), and ends
        // the refusal of its stopped turns: the relay heard the Stop.
        for (const [k, old] of this.entries) {
          if (old.connection.id === call.connection.id && old.running.size === 0 && !this.undoable(old)) this.entries.delete(k);
        }
        for (const [k, id] of this.stoppedKeys) if (id === call.connection.id) this.stoppedKeys.delete(k);
      }
      e = { turn: call.turn, connection: call.connection, calls: 0, steps: [], stopped, undo: "", running: new Map() };
      this.entries.set(key, e);
    }
    const stopSentence = () => refusal(`The person stopped this turn in the tab; “${title}” was not run or did not finish.`);
    if (e.stopped) return stopSentence();
    const entry = e;
    const r = { title, asking: false, stop: new AbortController() };
    entry.running.set(call.id, r);
    this.emit();
    const signal = eitherSignal(call.signal, r.stop.signal);
    const mine: ToolCall = {
      ...call, signal,
      asking: () => ((r.asking = true), call.asking(), this.emit()),
      answered: () => ((r.asking = false), call.answered(), this.emit()),
      step: () => (entry.steps.push({ call: call.id, tool: call.tool, action: call.action, title }), call.step(), this.emit()),
    };
    const stopped = new Promise<TabResult>((resolve) => {
      const on = () => resolve(stopSentence());
      if (r.stop.signal.aborted) on();
      else r.stop.signal.addEventListener("abort", on, { once: true });
    });
    try {
      return await Promise.race([run(mine), stopped]);
    } finally {
      entry.running.delete(call.id);
      entry.calls++;
      this.emit();
    }
  }

  private emit(): void {
    const lines = this.lines;
    for (const listener of [...this.listeners]) this.call(() => listener(lines));
  }

  private call(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      console.warn("tabrelay: an activity listener threw", err);
    }
  }
}

function lineOf(key: string, e: Entry, undoable: boolean): TurnLine {
  const running = [...e.running.values()];
  const now = running.map((r) => r.title).join(", ");
  const state = e.undo === "undone" ? "undone" : e.stopped ? "stopped" : running.some((r) => r.asking) ? "asking" : running.length ? "acting" : "done";
  const m = messages().activity;
  const who = whoOf(e.connection, messages().anAgent);
  const n = e.steps.length;
  let what = { acting: () => m.acting(now), asking: () => m.asking(now), done: () => m.done, stopped: () => m.stopped, undone: () => m.undone }[state]();
  if (e.undo === "undoing") what += ` · ${m.undoing}`;
  else if (typeof e.undo === "object") what += ` · ${m.undoFailed(e.undo.failed)}`;
  return { key, turn: e.turn, connection: e.connection, who, calls: e.calls, steps: n, state, undoable, now, text: `${who} · ${m.steps(n)} · ${what}` };
}

/** eitherSignal fires when a or b does, with its reason. */
function eitherSignal(a: AbortSignal, b: AbortSignal): AbortSignal {
  const c = new AbortController();
  const on = (s: AbortSignal) => () => c.abort(s.reason);
  if (a.aborted) c.abort(a.reason);
  else if (b.aborted) c.abort(b.reason);
  else {
    a.addEventListener("abort", on(a), { once: true });
    b.addEventListener("abort", on(b), { once: true });
  }
  return c.signal;
}
