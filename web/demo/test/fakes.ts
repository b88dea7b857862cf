// Fakes for the demo's tests: a storage, and a ToolCall as the SDK hands
// it to a handler.

import { ToolError, type Connection, type JsonObject, type LogLevel, type ToolCall } from "@tabrelay/tab";
import type { NotesStorage } from "../src/notes.js";

export class MemoryStorage implements NotesStorage {
  readonly data = new Map<string, string>();
  failWrites = false;
  getItem(key: string): string | null {
    return this.data.get(key) ?? null;
  }
  setItem(key: string, value: string): void {
    if (this.failWrites) throw new Error("QuotaExceededError");
    this.data.set(key, value);
  }
}

/** FakeCall is a ToolCall that records what the handler reported, and what it asked the person (refused: the person's answer). */
export class FakeCall implements ToolCall {
  static next = 0;
  readonly id = `call-${++FakeCall.next}`;
  readonly connection: Connection = { id: "conn-1", kind: "connector", client: "Claude", host: "claude.ai" };
  readonly turn = "turn-1";
  readonly deadline = Date.now() + 225_000;
  readonly redelivery = 0;
  readonly controller = new AbortController();
  readonly signal = this.controller.signal;
  steps = 0;
  asked: string[] = [];
  refused: string | undefined;
  progressed: [number, number | undefined, string | undefined][] = [];
  constructor(readonly tool: string, readonly arguments_: JsonObject = {}, readonly action: string | undefined = undefined) {}
  get arguments(): JsonObject {
    return this.arguments_;
  }
  progress(progress: number, total?: number, message?: string): void {
    this.progressed.push([progress, total, message]);
  }
  log(_level: LogLevel, _data: unknown): void {}
  asking(): void {}
  answered(): void {}
  step(): void {
    this.steps++;
  }
  confirm(detail: string): Promise<void> {
    this.asked.push(detail);
    return this.refused ? Promise.reject(new ToolError(this.refused)) : Promise.resolve();
  }
}

/** counter returns ids n-1, n-2, … */
export function counter(): () => string {
  let i = 0;
  return () => `n-${++i}`;
}
