// The search of search_notes: a plain search over the board (instant),
// and a thorough one that also reads the archive. The archive stands for
// a store that is slow to read (an old server, a big file): it is read in
// pages, ARCHIVE_PAGE_MS apart, so a thorough search really takes
// THOROUGH_SEARCH_MS — the estimate the person's permissions judge it by
// (estimateSearch) is the truth, not a guess.

import { ARCHIVE_SIZE, archiveIds, archiveNote, occurrences, wordsOf, type Board, type Note } from "./notes.js";

/** One note a search found: how often the search's words occur in it. */
export interface SearchHit {
  readonly id: string;
  readonly title: string;
  readonly matches: number;
}

/** The most hits a search returns: the board's first, then the archive's, the most matches first in each. */
export const MAX_HITS = 100;
/** The archive is read in this many pages… */
export const ARCHIVE_PAGES = 24;
/** …one every ARCHIVE_PAGE_MS. */
export const ARCHIVE_PAGE_MS = 500;
/** How long a thorough search takes: every page of the archive, at its pace. */
export const THOROUGH_SEARCH_MS = ARCHIVE_PAGES * ARCHIVE_PAGE_MS;
/** A plain search reads the board only: at most a thousand notes in memory. */
export const PLAIN_SEARCH_MS = 20;

/** estimateSearch is search_notes' estimate for the person's permissions (heavy counts from 10 s). */
export function estimateSearch(call: { readonly arguments: Readonly<Record<string, unknown>> }): number {
  return call.arguments["thorough"] === true ? THOROUGH_SEARCH_MS : PLAIN_SEARCH_MS;
}

export interface SearchOptions {
  /** Search the archive too (slow). */
  thorough?: boolean | undefined;
  /** Stops a thorough search between pages: the promise rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
  /** Hears how far a thorough search is, once per archive page (twice a second). */
  progress?: ((done: number, total: number, message: string) => void) | undefined;
  /** Waits ms, or rejects when signal fires; tests replace it. */
  sleep?: ((ms: number, signal?: AbortSignal) => Promise<void>) | undefined;
}

/** search finds the notes holding every word of query: the board's, and with thorough, the archive's. */
export async function search(board: Board, query: string, o: SearchOptions = {}): Promise<SearchHit[]> {
  const words = wordsOf(query);
  const hits: SearchHit[] = [];
  const take = (n: Note) => {
    const lower = (n.title + "\n" + n.body + "\n" + n.tags.join(" ")).toLowerCase();
    if (words.length && words.every((w) => lower.includes(w))) hits.push({ id: n.id, title: n.title, matches: occurrences(n, words) });
  };
  board.all.forEach(take);
  const mine = hits.sort(byMatches).splice(0, MAX_HITS);
  if (o.thorough) {
    const ids = archiveIds();
    const per = Math.ceil(ARCHIVE_SIZE / ARCHIVE_PAGES);
    const sleep = o.sleep ?? abortableSleep;
    for (let page = 0; page < ARCHIVE_PAGES; page++) {
      o.signal?.throwIfAborted();
      await sleep(ARCHIVE_PAGE_MS, o.signal);
      for (const id of ids.slice(page * per, (page + 1) * per)) take(archiveNote(id)!);
      o.progress?.(page + 1, ARCHIVE_PAGES, `Searched ${Math.min((page + 1) * per, ARCHIVE_SIZE)} of ${ARCHIVE_SIZE} archived notes.`);
    }
  }
  // The person's own notes come first: an archive of thousands must not crowd them out.
  return [...mine, ...hits.sort(byMatches)].slice(0, MAX_HITS);
}

function byMatches(a: SearchHit, b: SearchHit): number {
  return b.matches - a.matches || (a.id < b.id ? -1 : 1);
}

/** abortableSleep waits ms, or rejects with the signal's reason once it fires. */
export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const done = () => {
      signal?.removeEventListener("abort", stop);
      resolve();
    };
    const timer = setTimeout(done, ms);
    const stop = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", stop, { once: true });
  });
}
