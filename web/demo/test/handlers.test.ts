import assert from "node:assert/strict";
import { test } from "node:test";
import { Reply, TabClient, ToolError, type JsonObject, type ToolHandler } from "@tabrelay/tab";
import { makeHandlers, sizeWords } from "../src/handlers.js";
import { Board } from "../src/notes.js";
import { app } from "../src/tools.js";
import { AgentChanges } from "../src/undo.js";
import { counter, FakeCall, MemoryStorage } from "./fakes.js";

function setup() {
  const board = new Board({ storage: new MemoryStorage(), newId: counter() });
  const widths: number[] = [];
  const changes = new AgentChanges(board);
  const handlers = makeHandlers({
    board, pageUrl: () => "http://127.0.0.1:8080/demo/", changes,
    picture: (w) => (widths.push(w), "iVBORw0KGgo="), sleep: async () => {},
  });
  // Any arguments, the schema's or not: the handlers check what they take.
  const run = async (tool: string, args: JsonObject = {}, refused?: string) => {
    const h = (handlers as unknown as Record<string, ToolHandler | Record<string, ToolHandler>>)[tool]!;
    const action = typeof args["action"] === "string" ? args["action"] : undefined;
    const fn = typeof h === "function" ? h : h[action!]!;
    const call = new FakeCall(tool, args, action);
    call.refused = refused;
    return { result: await fn(call), call };
  };
  return { board, run, widths, changes };
}

test("the page's client takes these handlers: one per declared tool and action", () => {
  const { board } = setup();
  const handlers = makeHandlers({ board, pageUrl: () => "", picture: () => "" });
  assert.doesNotThrow(() => new TabClient({ relay: "https://relay.example.com", app, handlers }));
  assert.deepEqual(Object.keys(handlers).sort(), app.tools.map((t) => t.name).sort());
});

test("list_notes and read_note", async () => {
  const { run } = setup();
  const { result } = await run("list_notes", { tag: "work", limit: 1 });
  assert.deepEqual(Object.keys((result as object[])[0]!).sort(), ["id", "saved", "tags", "title", "updated"]);
  assert.equal((result as object[]).length, 1);
  const all = (await run("list_notes")).result as { id: string }[];
  assert.equal(all.length, 8);
  const note = (await run("read_note", { id: all[0]!.id })).result as Record<string, unknown>;
  assert.deepEqual(Object.keys(note).sort(), ["body", "created", "id", "saved", "tags", "title", "updated"]);
  await assert.rejects(run("read_note", { id: "nope" }), (e: Error) => e instanceof ToolError && /no note with the id "nope"/.test(e.message));
  await assert.rejects(run("read_note", {}), (e: Error) => e instanceof ToolError && /id is required/.test(e.message));
  await assert.rejects(run("list_notes", { limit: 0 }), (e: Error) => e instanceof ToolError && /from 1 to 200/.test(e.message));
  await assert.rejects(run("list_notes", { saved: "yes" }), ToolError);
});

test("write_note adds and edits, each a step", async () => {
  const { run, board } = setup();
  const add = await run("write_note", { action: "add", title: "From an agent", tags: ["Agent"] });
  assert.deepEqual(add.result, { id: "n-1", title: "From an agent" });
  assert.equal(add.call.steps, 1);
  const edit = await run("write_note", { action: "edit", id: "n-1", saved: true, body: "b" });
  assert.deepEqual(edit.result, { id: "n-1", title: "From an agent" });
  assert.equal(edit.call.steps, 1);
  assert.deepEqual([board.get("n-1")!.saved, board.get("n-1")!.body, board.get("n-1")!.tags], [true, "b", ["agent"]]);
  await assert.rejects(run("write_note", { action: "edit", id: "n-1" }), /Nothing to change/);
  await assert.rejects(run("write_note", { action: "add", title: "" }), (e: Error) => e instanceof ToolError && /needs a title/.test(e.message));
  await assert.rejects(run("write_note", { action: "edit", id: "a-0001", title: "x" }), /read-only/);
  await assert.rejects(run("write_note", { action: "add", title: "t", tags: "work" }), /list of strings/);
});

test("delete_note deletes, answers nothing, is a step", async () => {
  const { run, board } = setup();
  const id = board.all[0]!.id;
  const { result, call } = await run("delete_note", { id });
  assert.equal(result, undefined);
  assert.equal(call.steps, 1);
  assert.equal(board.get(id), undefined);
  await assert.rejects(run("delete_note", { id }), /no note with the id/);
});

test("export_notes answers the document as an embedded resource", async () => {
  const { run, board } = setup();
  const md = (await run("export_notes")).result as Reply;
  assert.ok(md instanceof Reply);
  const r = md.result.resources![0]!;
  assert.deepEqual([r.uri, r.mimeType], ["notes://export.md", "text/markdown"]);
  assert.match(r.text!, /^# Notes board\n\n8 notes\.\n/);
  assert.match(r.text!, /## Groceries\n/);
  assert.deepEqual(md.result.data, { format: "markdown", uri: "notes://export.md", notes: 8, characters: r.text!.length });
  const json = (await run("export_notes", { format: "json" })).result as Reply;
  const jr = json.result.resources![0]!;
  assert.deepEqual([jr.uri, jr.mimeType], ["notes://export.json", "application/json"]);
  assert.equal(JSON.parse(jr.text!).length, 8);
  await assert.rejects(run("export_notes", { format: "pdf" }), /"markdown" or "json"/);
  board.add({ title: "<script>x</script> & co", body: "<img src=x onerror=alert(1)>" });
  const raw = ((await run("export_notes")).result as Reply).result.resources![0]!.text!;
  assert.match(raw, /## &lt;script>x&lt;\/script> &amp; co\n/);
  assert.ok(!raw.includes("<img"), "raw HTML is escaped");
});

test("export_notes asks the person once it knows the size (confirmAt: handler); a refusal answers nothing of the notes", async () => {
  const { run } = setup();
  const { call, result } = await run("export_notes", { format: "json" });
  const chars = ((result as Reply).result.data as { characters: number }).characters;
  assert.deepEqual(call.asked, [`The export is ${(chars / 1000).toFixed(1)} kB: 8 notes as JSON.`]);
  await assert.rejects(run("export_notes", {}, "The person declined."), /The person declined\./);
  assert.equal(sizeWords(1), "1 byte");
  assert.equal(sizeWords(999), "999 bytes");
  assert.equal(sizeWords(2_400_000), "2.4 MB");
});

test("Undo turn: the notes a turn wrote or deleted come back, the last step first", async () => {
  const { run, board, changes } = setup();
  const before = JSON.stringify(board.all);
  const steps: { call: string }[] = [];
  const step = async (tool: string, args: JsonObject) => {
    const { call, result } = await run(tool, args);
    steps.push({ call: call.id });
    return result as { id: string };
  };
  const added = await step("write_note", { action: "add", title: "By an agent" });
  await step("write_note", { action: "edit", id: added.id, title: "By an agent, edited" });
  await step("write_note", { action: "edit", id: "n-sample-2", body: "Nothing." });
  await step("delete_note", { id: "n-sample-3" });
  assert.notEqual(JSON.stringify(board.all), before);
  const turn = { key: "conn-1 turn-1", turn: "turn-1", connection: new FakeCall("x").connection };
  const record = { ...turn, steps: steps.map((s) => ({ ...s, tool: "write_note", action: undefined, title: "Write a note" })) };
  board.open("work");
  assert.throws(() => changes.undo(record), /another board/, "never taken back on the board shown instead");
  board.open("main");
  changes.undo(record);
  assert.equal(JSON.stringify(board.all), before);
  assert.throws(() => changes.undo({ ...turn, steps: [{ call: "call-gone", tool: "delete_note", action: undefined, title: "Delete a note" }] }), /too old/);
});

test("search_notes: plain, thorough with progress, stopped", async () => {
  const { run } = setup();
  const plain = (await run("search_notes", { query: "Lisbon" })).result as { id: string; title: string; matches: number }[];
  assert.deepEqual(plain.map((h) => Object.keys(h).sort()), [["id", "matches", "title"]]);
  const { result, call } = await run("search_notes", { query: "garden", thorough: true });
  assert.ok((result as { id: string }[]).some((h) => h.id.startsWith("a-")));
  assert.ok(call.progressed.length >= 10);
  assert.deepEqual(call.progressed.at(-1)!.slice(0, 2), [24, 24]);
  await assert.rejects(run("search_notes", { query: "  " }), /at least one word/);
  await assert.rejects(run("search_notes", {}), /query is required/);

  const { board } = setup();
  const stopped = makeHandlers({ board, pageUrl: () => "", picture: () => "", sleep: async (_ms, signal) => signal?.throwIfAborted() });
  const call2 = new FakeCall("search_notes", { query: "x", thorough: true });
  call2.controller.abort(new Error("cancelled"));
  await assert.rejects(Promise.resolve((stopped.search_notes as unknown as ToolHandler)(call2)), (e: Error) => e instanceof ToolError && /stopped/.test(e.message));
});

test("board_picture answers the PNG, the count and the page's address", async () => {
  const { run, widths } = setup();
  const r = (await run("board_picture")).result as Reply;
  assert.deepEqual(r.result.data, { notes: 8, url: "http://127.0.0.1:8080/demo/" });
  assert.deepEqual(r.result.images, [{ mimeType: "image/png", data: "iVBORw0KGgo=" }]);
  await run("board_picture", { width: 64 });
  assert.deepEqual(widths, [640, 64]);
  await assert.rejects(run("board_picture", { width: 2000 }), /from 64 to 1024/);
});
