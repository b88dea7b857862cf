import assert from "node:assert/strict";
import { test } from "node:test";
import { HEAVY_MS } from "@tabrelay/tab/ui";
import { Board } from "../src/notes.js";
import { ARCHIVE_PAGES, estimateSearch, PLAIN_SEARCH_MS, search, THOROUGH_SEARCH_MS } from "../src/search.js";
import { MemoryStorage } from "./fakes.js";

test("the estimate: thorough is heavy, plain is instant", () => {
  assert.ok(THOROUGH_SEARCH_MS >= HEAVY_MS);
  assert.equal(estimateSearch({ arguments: { query: "x", thorough: true } }), THOROUGH_SEARCH_MS);
  assert.equal(estimateSearch({ arguments: { query: "x" } }), PLAIN_SEARCH_MS);
  assert.ok(PLAIN_SEARCH_MS < HEAVY_MS);
});

test("a plain search reads the board only, at once", async () => {
  const b = new Board({ storage: new MemoryStorage() });
  let slept = 0;
  const hits = await search(b, "garden", { sleep: async () => void slept++ });
  assert.deepEqual(hits.map((h) => h.title), ["Ideas for the garden"]);
  assert.equal(hits[0]!.matches, 2, "in the title and the tags");
  assert.equal(slept, 0);
});

test("a thorough search reads the archive at its pace, reporting progress", async () => {
  const b = new Board({ storage: new MemoryStorage() });
  const waits: number[] = [];
  const progress: number[] = [];
  const hits = await search(b, "garden", {
    thorough: true, sleep: async (ms) => void waits.push(ms), progress: (done, total) => progress.push(done / total),
  });
  assert.equal(waits.length, ARCHIVE_PAGES);
  assert.equal(waits.reduce((a, w) => a + w, 0), THOROUGH_SEARCH_MS, "the estimate is the truth");
  assert.ok(waits.every((w) => w >= 250), "progress at most four times a second");
  assert.equal(progress.at(-1), 1);
  assert.ok(progress.every((p, i) => i === 0 || p > progress[i - 1]!), "progress only goes up");
  assert.ok(hits.some((h) => h.id.startsWith("a-")) && hits.some((h) => h.id.startsWith("n-")));
  assert.ok(hits.length <= 100);
  const archived = hits.filter((h) => h.id.startsWith("a-"));
  assert.equal(hits[0]!.id, "n-sample-6", "the board's own notes first");
  assert.ok(archived.every((h, i) => i === 0 || h.matches <= archived[i - 1]!.matches), "then the most matches first");
});

test("a thorough search stops when its signal fires", async () => {
  const b = new Board({ storage: new MemoryStorage() });
  const c = new AbortController();
  let pages = 0;
  const p = search(b, "note", {
    thorough: true, signal: c.signal,
    sleep: async () => {
      if (++pages === 3) c.abort(new Error("cancelled"));
    },
  });
  await assert.rejects(p, /cancelled/);
  assert.equal(pages, 3);
});

test("the real wait ends early on abort", async () => {
  const { abortableSleep } = await import("../src/search.js");
  const c = new AbortController();
  const started = Date.now();
  const p = abortableSleep(10_000, c.signal);
  setTimeout(() => c.abort(new Error("stop")), 10);
  await assert.rejects(p, /stop/);
  assert.ok(Date.now() - started < 2000);
});
