import assert from "node:assert/strict";
import { test } from "node:test";
import { ARCHIVE_SIZE, archiveIds, archiveNote, Board, LIMITS, NOTES_KEY, NoteError, notesKey, sampleNotes } from "../src/notes.js";
import { counter, MemoryStorage } from "./fakes.js";

const T0 = Date.UTC(2026, 11, 1, 12);

function board(storage = new MemoryStorage(), now = () => T0) {
  return { storage, board: new Board({ storage, now, newId: counter() }) };
}

test("a new board is seeded with the samples and keeps them", () => {
  const { storage, board: b } = board();
  assert.equal(b.all.length, 8);
  assert.ok(b.all.some((n) => n.saved) && b.all.some((n) => !n.saved));
  assert.equal(JSON.parse(storage.getItem(NOTES_KEY)!).length, 8);
  assert.ok(NOTES_KEY.startsWith("tabrelay-demo:"));
  // A second board over the same storage reads them, it does not seed again.
  storage.setItem(NOTES_KEY, JSON.stringify(sampleNotes(T0).slice(0, 2)));
  assert.equal(new Board({ storage }).all.length, 2);
});

test("an emptied board stays empty; a broken one starts over", () => {
  const storage = new MemoryStorage();
  storage.setItem(NOTES_KEY, "[]");
  assert.equal(new Board({ storage }).all.length, 0);
  storage.setItem(NOTES_KEY, "{not json");
  assert.equal(new Board({ storage }).all.length, 8);
});

test("boards are documents: each has its own notes and key; another starts empty; without storage each lasts for the page", () => {
  const { storage, board: b } = board();
  assert.equal(b.board.id, "main");
  b.open("work");
  assert.deepEqual([b.board.title, b.key, b.all.length], ["Work", notesKey("work"), 0]);
  b.add({ title: "Quarterly plan" });
  assert.equal(JSON.parse(storage.getItem(notesKey("work"))!).length, 1);
  b.open("main");
  assert.equal(b.all.length, 8);
  assert.equal(new Board({ storage, board: "work" }).all[0]?.title, "Quarterly plan");
  const bare = new Board({ storage: null, newId: counter() });
  bare.open("work");
  bare.add({ title: "Only here" });
  bare.open("main");
  bare.remove(bare.all[0]!.id);
  bare.open("work");
  assert.deepEqual(bare.all.map((n) => n.title), ["Only here"]);
  bare.open("main");
  assert.equal(bare.all.length, 7, "the first board keeps its own, too");
});

test("add, edit and delete, written through", () => {
  let now = T0;
  const { storage, board: b } = board(new MemoryStorage(), () => now);
  const n = b.add({ title: "  Plan  ", body: "text", tags: ["Work", " #home ", "work", ""] });
  assert.deepEqual([n.id, n.title, n.tags, n.saved], ["n-1", "Plan", ["work", "home"], false]);
  assert.equal(n.created, new Date(T0).toISOString());
  now += 60_000;
  const e = b.edit(n.id, { saved: true, body: "new" });
  assert.deepEqual([e.title, e.body, e.saved, e.created], ["Plan", "new", true, n.created]);
  assert.equal(e.updated, new Date(now).toISOString());
  assert.equal(b.all[0]!.id, n.id, "the last updated comes first");
  assert.ok(JSON.parse(storage.getItem(NOTES_KEY)!).some((x: { id: string; saved: boolean }) => x.id === n.id && x.saved));
  b.remove(n.id);
  assert.equal(b.get(n.id), undefined);
  assert.throws(() => b.remove(n.id), (err: Error) => err instanceof NoteError && /no note with the id "n-1"/.test(err.message));
});

test("what a note may hold is checked with a sentence", () => {
  const { board: b } = board();
  for (const [fields, words] of [
    [{ title: "" }, /needs a title/],
    [{ title: "x".repeat(LIMITS.title + 1) }, /at most 200 characters/],
    [{ title: "t", body: "x".repeat(LIMITS.body + 1) }, /body has at most/],
    [{ title: "t", tags: Array.from({ length: 13 }, (_, i) => `t${i}`) }, /at most 12 tags/],
    [{ title: "t", tags: ["x".repeat(41)] }, /tag has at most 40/],
  ] as const) {
    assert.throws(() => b.add(fields), (err: Error) => err instanceof NoteError && words.test(err.message), JSON.stringify(fields).slice(0, 40));
  }
});

test("list filters by words, tag and saved, and limits", () => {
  const { board: b } = board();
  assert.deepEqual(b.list({ tag: "WORK" }).map((n) => n.title).sort(), ["Meeting notes: planning", "Release checklist"]);
  assert.ok(b.list({ saved: true }).every((n) => n.saved));
  assert.equal(b.list({ saved: true }).length + b.list({ saved: false }).length, 8);
  assert.deepEqual(b.list({ query: "LENTILS onion" }).map((n) => n.title), ["Recipe: lentil soup"]);
  assert.deepEqual(b.list({ query: "lentils tram" }), [], "every word must be there");
  assert.equal(b.list({ limit: 3 }).length, 3);
  assert.ok(b.tags.includes("home") && b.tags.every((t, i, a) => i === 0 || a[i - 1]! < t));
});

test("the archive: generated, the same each time, read-only", () => {
  const { board: b } = board();
  assert.equal(archiveIds().length, ARCHIVE_SIZE);
  assert.ok(ARCHIVE_SIZE >= 2000);
  const a = archiveNote("a-0042")!;
  assert.deepEqual(archiveNote("a-0042"), a);
  assert.ok(a.tags.includes("archive") && a.title.includes("(42)"));
  assert.equal(archiveNote("a-0000"), undefined);
  assert.equal(archiveNote(`a-${ARCHIVE_SIZE + 1}`), undefined);
  assert.deepEqual(b.get("a-0042"), a, "read_note reads the archive");
  assert.ok(!b.list().some((n) => n.id.startsWith("a-")), "lists hold the board only");
  assert.throws(() => b.edit("a-0042", { title: "x" }), /archive, which is read-only/);
  assert.throws(() => b.remove("a-0042"), /archive, which is read-only/);
});

test("another tab's change is read on reload, and listeners hear it", () => {
  const storage = new MemoryStorage();
  const one = new Board({ storage, newId: counter() });
  const two = new Board({ storage });
  let heard = 0;
  two.onChange(() => heard++);
  one.add({ title: "From tab one" });
  assert.equal(two.all.length, 8);
  two.reload(); // the page calls it on the storage event
  assert.equal(two.all.length, 9);
  assert.equal(heard, 1);
});

test("a storage that refuses writes keeps the notes for the page and says so", () => {
  const storage = new MemoryStorage();
  const { board: b } = board(storage);
  storage.failWrites = true;
  b.add({ title: "Kept here" });
  assert.ok(b.storageFailed);
  assert.ok(b.all.some((n) => n.title === "Kept here"));
  const none = new Board({ storage: null });
  assert.equal(none.all.length, 8);
  none.add({ title: "x" });
  assert.equal(none.all.length, 9);
});
