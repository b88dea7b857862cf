// The at-most-once record of docs/tab-protocol.md §10: every tab of the
// browser runs each call id at most once. A Web Lock per call id says that
// some tab runs it now; a localStorage entry per call id says it was
// started ("running") or finished ("done", with its result when that fits).

import type { Environment, LocksLike, StorageLike } from "./env.js";
import type { TabResult } from "./protocol.js";
import { refusal } from "./notes.js";

/** How a call id was settled by claim. */
export type Claimed =
  /** This tab ran it: the result of its run. */
  | { by: "this-tab"; result: TabResult }
  /** The record had it: run before, here or in another tab. */
  | { by: "record"; result: TabResult }
  /** For now only (another tab runs it, the record failed): a later delivery asks again. */
  | { by: "for-now"; result: TabResult };

interface Entry {
  state: "running" | "done";
  /** Unix ms: the call's deadline plus a margin. The entry goes after it. */
  keepUntil: number;
  result?: TabResult;
  /** The result went when the person turned the data switch on. */
  withheld?: true;
}

/** Sentences of the results the record answers with itself. */
export const SENTENCES = {
  halfway:
    "This call was started in a tab of this browser that closed before it finished; it may have run in part, so it was not run again. Read the app's history.",
  elsewhere:
    "This call runs in another tab of this browser, which has not answered yet; read the app's history once it has.",
  notKept:
    "This call ran already in this browser, but its result was too large to keep for a second delivery; read the app's history.",
  notRecorded: "This tab could not record the call, so it did not run it; nothing was done.",
  withheld:
    "This call ran already in this browser, but its result was not kept: the person has since set the tab to let agents see names and summaries only. Call again to read what that allows.",
} as const;

/** holdsData says whether a result carries anything of the app's data: an error or a refusal alone does not. */
export function holdsData(r: TabResult): boolean {
  return r.data !== undefined || !!(r.images ?? r.audio ?? r.resources);
}

/** How long an entry outlives its call's deadline: room for clock skew (§10). */
const KEEP_AFTER_DEADLINE_MS = 10 * 60_000;
/** An entry whose deadline is unknown or absurd is kept this long from now. */
const KEEP_WITHOUT_DEADLINE_MS = 60 * 60_000;
/** How often a tab looks for another tab's result while waiting for it. */
const POLL_MS = 100;
/** The record is pruned once every so many claims, and when a write fails. */
const PRUNE_EVERY = 64;
/** The largest entry kept (characters of JSON): a larger result is kept as done without it, and in the tab's memory. */
const MAX_ENTRY = 128 * 1024;

export class CallRecord {
  private claims = 0;
  private readonly prefix: string;

  constructor(
    private readonly env: Environment,
    private readonly storage: StorageLike,
    storagePrefix: string,
    /** How long to wait for another tab's result before answering that it runs there. */
    private readonly waitForOtherTabMs: number,
  ) {
    this.prefix = storagePrefix + ":call:";
  }

  /**
   * claim runs `run` unless this browser ran or runs the call already, and
   * returns the result to send. It never throws.
   */
  async claim(id: string, deadline: number, run: () => Promise<TabResult>): Promise<Claimed> {
    if (++this.claims % PRUNE_EVERY === 1) this.prune();
    const locks = this.env.locks;
    if (!locks) return this.claimWithoutLock(id, deadline, run);
    const claimed = await this.settleIfFree(locks, id, deadline, run);
    return claimed === "held" ? this.awaitOtherTab(id, deadline, run) : claimed;
  }

  /**
   * settleIfFree settles the call holding its lock, unless another tab
   * holds it: "held", that tab runs the call now.
   */
  private async settleIfFree(locks: LocksLike, id: string, deadline: number, run: () => Promise<TabResult>): Promise<Claimed | "held"> {
    let settled: Claimed | undefined;
    try {
      await locks.request("tabrelay-call-" + id, { ifAvailable: true }, async (lock) => {
        // null: another tab holds the lock.
        if (lock) settled = await this.settleHoldingLock(id, deadline, run);
      });
    } catch (err) {
      this.env.warn("the call lock failed", err);
      if (!settled) return { by: "for-now", result: refusal(SENTENCES.notRecorded) };
    }
    return settled ?? "held";
  }

  /** settleHoldingLock decides while this tab holds the call's lock: nobody else runs it. */
  private async settleHoldingLock(id: string, deadline: number, run: () => Promise<TabResult>): Promise<Claimed> {
    const entry = this.read(id);
    if (entry?.state === "done") return { by: "record", result: this.resultOf(entry) };
    // Running, and nobody holds its lock: the tab that ran it closed mid-call.
    if (entry?.state === "running") return { by: "record", result: refusal(SENTENCES.halfway) };
    return this.runRecorded(id, deadline, run);
  }

  /**
   * claimWithoutLock is the fallback where the Web Locks API is missing: the
   * entry alone claims the id. Two tabs reading at the same instant could
   * both run it, and a running entry cannot tell a live tab from a closed
   * one; both are rare, and the best this browser allows.
   */
  private async claimWithoutLock(id: string, deadline: number, run: () => Promise<TabResult>): Promise<Claimed> {
    const entry = this.read(id);
    if (entry?.state === "done") return { by: "record", result: this.resultOf(entry) };
    if (entry?.state === "running") return this.awaitOtherTab(id, deadline, run);
    return this.runRecorded(id, deadline, run);
  }

  private async runRecorded(id: string, deadline: number, run: () => Promise<TabResult>): Promise<Claimed> {
    const keepUntil = this.keepUntil(deadline);
    if (!this.write(id, { state: "running", keepUntil })) {
      return { by: "for-now", result: refusal(SENTENCES.notRecorded) };
    }
    const result = await run();
    // A result too big for the cap or the storage quota is kept as "done"
    // without it: a later delivery must still not run the call again.
    if (!this.write(id, { state: "done", keepUntil, result })) {
      this.write(id, { state: "done", keepUntil });
    }
    return { by: "this-tab", result };
  }

  /**
   * awaitOtherTab polls for the result of the tab that holds the call, up
   * to the wait. The lock, not the record, says whether that tab lives: it
   * is asked for again at every poll, and once it is free (the tab closed
   * mid-call, and the browser let its lock go) this tab decides holding it,
   * as a claim would have then — a "running" record is answered as run in
   * part, never run again (issue 25: a closed tab was reported as still
   * running, after the whole wait).
   */
  private async awaitOtherTab(id: string, deadline: number, run: () => Promise<TabResult>): Promise<Claimed> {
    const until = this.env.now() + this.waitForOtherTabMs;
    for (;;) {
      const entry = this.read(id);
      if (entry?.state === "done") return { by: "record", result: this.resultOf(entry) };
      const locks = this.env.locks;
      const settled = locks ? await this.settleIfFree(locks, id, deadline, run) : "held";
      if (settled !== "held") return settled;
      if (this.env.now() >= until) return { by: "for-now", result: refusal(SENTENCES.elsewhere) };
      await new Promise<void>((resolve) => this.env.setTimeout(resolve, POLL_MS));
    }
  }

  private resultOf(entry: Entry): TabResult {
    return entry.result ?? refusal(entry.withheld ? SENTENCES.withheld : SENTENCES.notKept);
  }

  /** withhold drops the data of every result kept: the person turned the data switch on. */
  withhold(): void {
    this.each((key, entry) => {
      if (entry?.result && holdsData(entry.result)) this.storage.setItem(key, JSON.stringify({ state: "done", keepUntil: entry.keepUntil, withheld: true }));
    });
  }

  private keepUntil(deadline: number): number {
    const now = this.env.now();
    const sane = Number.isFinite(deadline) && deadline > now - KEEP_AFTER_DEADLINE_MS && deadline < now + KEEP_WITHOUT_DEADLINE_MS;
    return sane ? deadline + KEEP_AFTER_DEADLINE_MS : now + KEEP_WITHOUT_DEADLINE_MS;
  }

  private read(id: string): Entry | undefined {
    try {
      const text = this.storage.getItem(this.prefix + id);
      return text === null ? undefined : (JSON.parse(text) as Entry);
    } catch {
      return undefined;
    }
  }

  private write(id: string, entry: Entry): boolean {
    const text = JSON.stringify(entry);
    if (text.length > MAX_ENTRY) return false;
    for (let again = 0; ; again++) {
      try {
        this.storage.setItem(this.prefix + id, text);
        return true;
      } catch {
        if (again) return false;
        this.prune(); // a full storage may hold stale entries
      }
    }
  }

  /** prune removes the entries whose calls the relay can no longer send (§10). */
  prune(): void {
    const now = this.env.now();
    // An unreadable entry is stale.
    this.each((key, entry) => (entry?.keepUntil ?? 0) > now || this.storage.removeItem(key));
  }

  /** each calls fn with every entry of the record (undefined when unreadable), after listing them. */
  private each(fn: (key: string, entry: Entry | undefined) => unknown): void {
    try {
      const keys: string[] = [];
      for (let i = 0; i < this.storage.length; i++) {
        const key = this.storage.key(i);
        if (key?.startsWith(this.prefix)) keys.push(key);
      }
      for (const key of keys) fn(key, this.read(key.slice(this.prefix.length)));
    } catch (err) {
      this.env.warn("the call record could not be gone through", err);
    }
  }
}
