// Undo turn for the Notes board: what each of an agent's calls changed
// (the notes as they were before), kept per call id, so that the activity
// line's Undo turn (the SDK's onUndoTurn) puts back every note a turn
// wrote or deleted, the last step first.

import type { TurnRecord } from "@tabrelay/tab/ui";
import type { Board, Note } from "./notes.js";

/** The most calls whose changes are kept; the oldest go first. */
export const KEPT_CALLS = 500;

export class AgentChanges {
  private readonly before = new Map<string, { board: string; id: string; note: Note | undefined }[]>();

  constructor(private readonly board: Board) {}

  /** record keeps how the note id was before the call changed it (undefined: it did not exist). */
  record(call: string, id: string, note: Note | undefined): void {
    const list = this.before.get(call) ?? [];
    list.push({ board: this.board.board.id, id, note });
    this.before.delete(call);
    this.before.set(call, list);
    if (this.before.size > KEPT_CALLS) this.before.delete(this.before.keys().next().value as string);
  }

  /** undo puts back every note the turn's steps changed, the last first. */
  undo(turn: TurnRecord): void {
    const calls = [...new Set(turn.steps.map((s) => s.call))].reverse();
    if (calls.some((c) => !this.before.has(c))) throw new Error("This turn is too old: the board no longer keeps what it changed.");
    // A turn is taken back on the board it changed, never on the one shown instead.
    const other = calls.flatMap((c) => this.before.get(c)!).find((b) => b.board !== this.board.board.id);
    if (other) throw new Error("This turn changed another board: open it, then undo.");
    for (const call of calls) {
      for (const { id, note } of [...this.before.get(call)!].reverse()) this.board.restore(id, note);
      this.before.delete(call);
    }
  }
}
