// The data switch per document (issue 24 items 1, 2, 3, 5, 8, 9; seed 000
// "What agents are sent of the data"): kept per document identity, what it
// refuses and strips, checked again when a result is sent (replays too),
// held results dropped when it turns on, questions withdrawn, the notice,
// and the kinds of tools that declare none.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Reply, type Handlers } from "../src/calls.js";
import { refusal } from "../src/notes.js";
import { SENTENCES } from "../src/record.js";
import { defineApp } from "../src/tools.js";
import { DATA_SENTENCES, listed } from "../src/ui/data-scope.js";
import { ANOTHER_DOCUMENT, createPermissions, type Answer, type Question } from "../src/ui/permissions-model.js";
import { FakeBrowser, FakeSite, flush } from "./fakes.js";

const PNG = { mimeType: "image/png", data: "iVBORw0KGgo=" };

const app = defineApp({
  version: "ds-1", app: { name: "sheet", title: "Sheet" }, instructions: "Sheet tools.",
  tools: [
    {
      name: "stats", description: "Statistics of a column, per group.", annotations: { readOnlyHint: true }, result: "summaries",
      inputSchema: { type: "object", properties: { group: { type: "string" } } },
      dataScope: { singleCell: ["columns.*.min", "columns.*.max", "median"], pictures: ["thumbnail"], groups: ["group"] },
    },
    {
      name: "deep", description: "Heavy statistics of a group.", result: "summaries", permissions: ["heavy"],
      inputSchema: { type: "object", properties: { group: { type: "string" } } }, dataScope: { groups: ["group"] },
    },
    { name: "values", description: "Reads cell values.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true }, result: "cells" },
    { name: "later", description: "A read nobody classified yet.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } },
    { name: "media", description: "A summary read aloud, with its files.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true }, result: "summaries" },
    { name: "write", description: "A write that declares no kinds.", inputSchema: { type: "object" }, result: "none" },
    { name: "wipe", description: "A destructive write that declares no kinds.", inputSchema: { type: "object" }, annotations: { destructiveHint: true }, result: "none" },
  ],
});

const STATS = {
  count: 3, mean: 2, median: 2,
  columns: [{ name: "a", mean: 2, min: 1, max: 3 }, { name: "b", mean: 5, min: 4, max: 6 }],
  thumbnail: "data:image/png;base64,iVBORw0KGgo=",
};

const conn = { id: "conn_1", kind: "connector", client: "Claude", host: "claude.ai" };
const call = (id: string, tool: string, args: Record<string, unknown> = {}, more: Record<string, unknown> = {}) =>
  ({ type: "call", id, tool, arguments: args, connection: conn, turn: "turn-1", deadline: 1_767_225_600_000 + 225_000, ...more });

function setup(o: { site?: FakeSite; browser?: FakeBrowser; confirm?: (q: Question) => Promise<Answer> } = {}) {
  const site = o.site ?? new FakeSite();
  const browser = o.browser ?? new FakeBrowser();
  const perms = createPermissions({ app, environment: site.env(), ...(o.confirm ? { confirm: o.confirm } : {}) });
  const runs: string[] = [];
  const held = new Map<string, () => void>();
  const handlers: Handlers<typeof app> = {
    stats: (c) => (runs.push(c.id), new Reply({ data: STATS, images: [PNG], resources: [{ uri: "x://t.png", mimeType: "image/png", blob: PNG.data }, { uri: "x://t.txt", mimeType: "text/plain", text: "t" }] })),
    // values answers when the test says: the switch may change meanwhile.
    values: (c) => (runs.push(c.id), new Promise((resolve) => held.set(c.id, () => resolve(new Reply({ data: { cells: [1, 2, 3] }, images: [PNG] }))))),
    later: (c) => (runs.push(c.id), { rows: 1 }),
    media: (c) => (runs.push(c.id), new Reply({
      data: { mean: 2 }, audio: [{ mimeType: "audio/wav", data: "UklGRg==" }],
      resources: [{ uri: "x://untyped", blob: PNG.data }, { uri: "x://t.pdf", mimeType: "application/pdf", blob: "JVBERi0=" }],
    })),
    deep: (c) => (runs.push(c.id), { mean: 1 }),
    write: (c) => (runs.push(c.id), undefined),
    wipe: (c) => (runs.push(c.id), undefined),
  };
  const tab = browser.tab({ app, handlers, permissions: perms });
  tab.client.start();
  tab.relay.last.welcome();
  const sock = () => tab.relay.last;
  const results = (id: string) => sock().sent("result").filter((m) => m["id"] === id).map((m) => m["result"]);
  return { site, browser, perms, runs, held, sock, results, tab };
}

describe("the switch is per document (item 1)", () => {
  test("kept by the document's id: another document has its own, other tabs follow, a later page reads it", () => {
    const site = new FakeSite();
    const a = setup({ site });
    const b = setup({ site });
    a.perms.setDocument({ id: "board-1", name: "Work" });
    b.perms.setDocument({ id: "board-1", name: "Work" });
    const heard: boolean[] = [];
    b.perms.onChange((mine) => heard.push(mine));
    a.perms.setSummariesOnly(true);
    assert.equal(b.perms.summariesOnly, true, "the other tab follows through the storage event");
    assert.deepEqual(heard, [false]);
    assert.match(site.storage.getItem("tabrelay:data:sheet") ?? "", /"id:board-1":\{"summariesOnly":true\}/);
    a.perms.setDocument({ id: "board-2", name: "Home" });
    assert.equal(a.perms.summariesOnly, false, "another document has its own switch");
    assert.deepEqual(a.perms.answer({ connection: conn, tools: ["values"] }), { values: "runs" });
    a.perms.setDocument({ id: "board-1", name: "Work" });
    assert.equal(a.perms.summariesOnly, true);
    const later = setup({ site });
    later.perms.setDocument({ id: "board-1", name: "Work" });
    assert.equal(later.perms.summariesOnly, true);
  });

  test("a document without an id, or a browser that keeps no site data, keeps it for the page only", () => {
    const site = new FakeSite();
    const a = setup({ site });
    a.perms.setDocument({ name: "Untitled" });
    a.perms.setSummariesOnly(true);
    assert.equal(a.perms.summariesOnly, true);
    assert.equal(site.storage.getItem("tabrelay:data:sheet"), null);
    assert.equal(setup({ site }).perms.summariesOnly, false, "another page does not have it");
    const bare = createPermissions({ app, environment: { storage: null, onStorage: () => () => {}, onPageHide: () => () => {} } });
    bare.setDocument({ id: "board-1", name: "Work" });
    bare.setSummariesOnly(true);
    assert.equal(bare.summariesOnly, true);
  });

  test("a switch an older version kept for the whole app stays on for documents without their own", () => {
    const site = new FakeSite();
    site.storage.setItem("tabrelay:permissions:sheet", JSON.stringify({ kinds: {}, summariesOnly: true }));
    const t = setup({ site });
    t.perms.setDocument({ id: "board-9", name: "Old" });
    assert.equal(t.perms.summariesOnly, true);
    t.perms.setMode("read-only");
    assert.equal(t.perms.summariesOnly, true, "a settings change keeps it");
  });
  test("a stored field of another type reads as unset: a string does not hide the notice or set the switch", async () => {
    const site = new FakeSite();
    site.storage.setItem("tabrelay:data:sheet", JSON.stringify({ "id:d1": { summariesOnly: "false", noticed: "no" }, "id:d2": "on" }));
    const t = setup({ site });
    t.perms.setDocument({ id: "d1", name: "One" });
    assert.equal(t.perms.summariesOnly, false);
    t.sock().receive(call("c1", "stats"));
    await flush();
    assert.equal(t.perms.noticeDue, true, "the notice is still due");
    t.perms.setDocument({ id: "d2", name: "Two" });
    assert.equal(t.perms.summariesOnly, false);
  });
});

describe("what the switch refuses and strips (item 2)", () => {
  test("cell-level and unclassified tools are refused before they run, and listed as refused", async () => {
    const t = setup();
    t.perms.setSummariesOnly(true);
    t.sock().receive(call("c1", "values"));
    t.sock().receive(call("c2", "later"));
    await flush();
    assert.deepEqual(t.runs, []);
    assert.deepEqual(t.results("c1"), [refusal(DATA_SENTENCES.cells)]);
    assert.deepEqual(t.results("c2"), [refusal(DATA_SENTENCES.unclassified)]);
    assert.deepEqual(t.perms.answer({ connection: conn, tools: ["values", "later", "stats"] }), { values: "refused", later: "refused", stats: "runs" });
  });

  test("what runs goes without pictures and single-cell values, said after the data; means and counts stay", async () => {
    const t = setup();
    t.sock().receive(call("c0", "stats"));
    await flush();
    t.perms.setSummariesOnly(true);
    t.sock().receive(call("c1", "stats"));
    await flush();
    const [off] = t.results("c0") as { images?: unknown[] }[];
    assert.equal(off?.images?.length, 1, "with the switch off everything goes");
    assert.deepEqual(t.results("c1"), [{
      data: { count: 3, mean: 2, columns: [{ name: "a", mean: 2 }, { name: "b", mean: 5 }] },
      resources: [{ uri: "x://t.txt", mimeType: "text/plain", text: "t" }],
      notes: [{ text: DATA_SENTENCES.leftOut(`pictures and ${DATA_SENTENCES.singleCell("columns.*.min, columns.*.max, median")}`) }],
    }]);
  });

  test("what was left out (and what the settings refuse) is listed as a sentence lists it", () => {
    assert.equal(listed(["pictures"]), "pictures");
    assert.equal(listed(["pictures", "sound clips"]), "pictures and sound clips");
    assert.equal(listed(["pictures", "sound clips", "single-cell values"]), "pictures, sound clips and single-cell values");
  });

  test("sound clips, and bytes whose type is not said (a picture, maybe), are left out as pictures are; a typed file stays", async () => {
    const t = setup();
    t.perms.setSummariesOnly(true);
    t.sock().receive(call("c1", "media"));
    await flush();
    assert.deepEqual(t.results("c1"), [{
      data: { mean: 2 },
      resources: [{ uri: "x://t.pdf", mimeType: "application/pdf", blob: "JVBERi0=" }],
      notes: [{ text: DATA_SENTENCES.leftOut("pictures and sound clips") }],
    }]);
  });

  test("a summary over a group an agent shaped by naming cells is refused; other groups run", async () => {
    const t = setup();
    t.perms.markShaped("picked");
    t.sock().receive(call("c1", "stats", { group: "picked" }));
    await flush();
    assert.equal(t.runs.length, 1, "with the switch off it runs");
    t.perms.setSummariesOnly(true);
    t.sock().receive(call("c2", "stats", { group: "picked" }));
    t.sock().receive(call("c3", "stats", { group: "all" }));
    await flush();
    assert.deepEqual(t.results("c2"), [refusal(DATA_SENTENCES.shaped)]);
    assert.equal(t.runs.length, 2);
    t.perms.setDocument({ id: "other", name: "Other" });
    t.perms.setSummariesOnly(true);
    t.sock().receive(call("c4", "stats", { group: "picked" }));
    await flush();
    assert.equal(t.runs.length, 3, "the marks are the document's");
  });
});

describe("a question the switch made moot (item 2)", () => {
  test("turned on while a question about a summary over a shaped group waits: the card goes, the call is refused unrun", async () => {
    const asked: Question[] = [];
    const t = setup({ confirm: (q) => (asked.push(q), new Promise<Answer>(() => {})) });
    t.perms.markShaped("picked");
    t.sock().receive(call("c1", "deep", { group: "picked" }));
    await flush();
    assert.equal(asked.length, 1, "heavy work asks");
    t.perms.setSummariesOnly(true);
    await flush();
    assert.equal(asked[0]!.signal.aborted, true, "the question is over");
    assert.deepEqual(t.results("c1"), [refusal(DATA_SENTENCES.shaped)]);
    assert.deepEqual(t.runs, []);
  });
});

describe("checked again when the result is sent (item 3)", () => {
  test("turned on while a call runs: its result is refused", async () => {
    const t = setup();
    t.sock().receive(call("c1", "values"));
    await flush();
    t.perms.setSummariesOnly(true);
    t.held.get("c1")!();
    await flush();
    assert.deepEqual(t.results("c1"), [refusal(DATA_SENTENCES.cells)]);
  });

  test("a call started on a document whose switch is on is refused though another is shown when it ends", async () => {
    const t = setup();
    t.perms.setDocument({ id: "d1", name: "One" });
    t.sock().receive(call("c1", "values"));
    await flush();
    t.perms.setSummariesOnly(true);
    t.perms.setDocument({ id: "d2", name: "Two" });
    t.held.get("c1")!();
    await flush();
    assert.deepEqual(t.results("c1"), [refusal(DATA_SENTENCES.cells)]);
  });

  test("a replay from the record or from memory passes the switch too", async () => {
    const browser = new FakeBrowser();
    const site = new FakeSite();
    const a = setup({ browser, site });
    a.sock().receive(call("c1", "stats"));
    await flush();
    // Another tab of the browser, switch on, gets the redelivery: the shared record answers it.
    const b = setup({ browser, site });
    b.perms.setSummariesOnly(true);
    // The switch turned on in b dropped the record's result (below); put one back as an older tab would have left it.
    browser.local.setItem("tabrelay:call:c2", JSON.stringify({ state: "done", keepUntil: browser.clock.now() + 600_000, result: { data: STATS, images: [PNG] } }));
    b.sock().receive(call("c2", "stats", {}, { redelivery: 1 }));
    await flush();
    assert.equal(b.runs.length, 0);
    const [replayed] = b.results("c2") as { images?: unknown; notes?: unknown[] }[];
    assert.equal(replayed?.images, undefined, "the picture is left out of the replay");
    assert.equal(replayed?.notes?.length, 1);
  });
});

describe("held results go when the switch turns on (item 3)", () => {
  test("memory and the record keep no data: a redelivery reads that the result was withheld", async () => {
    const browser = new FakeBrowser();
    const t = setup({ browser });
    t.sock().receive(call("c1", "stats"));
    t.sock().receive(call("c2", "write"));
    await flush();
    assert.match(browser.local.getItem("tabrelay:call:c1") ?? "", /"mean"/);
    t.perms.setSummariesOnly(true);
    assert.doesNotMatch(browser.local.getItem("tabrelay:call:c1") ?? "", /"mean"|iVBOR/);
    t.sock().receive(call("c1", "stats", {}, { redelivery: 1 }));
    await flush();
    assert.deepEqual(t.results("c1").at(-1), refusal(SENTENCES.withheld));
    // Another tab that follows the switch drops its memory too, and the record answers it the same.
    const other = setup({ browser, site: t.site });
    assert.equal(other.perms.summariesOnly, false);
    other.sock().receive(call("c1", "stats", {}, { redelivery: 2 }));
    await flush();
    assert.deepEqual(other.results("c1"), [refusal(SENTENCES.withheld)]);
    assert.equal(t.runs.length + other.runs.length, 2, "c1 and c2 ran once each, c1 never again");
  });

  test("turned on by another tab for a document this tab no longer shows: this tab's memory keeps no data of it either", async () => {
    const browser = new FakeBrowser();
    const site = new FakeSite();
    const a = setup({ browser, site });
    a.perms.setDocument({ id: "d1", name: "One" });
    a.sock().receive(call("c1", "stats"));
    await flush();
    a.perms.setDocument({ id: "d2", name: "Two" });
    const b = setup({ browser, site });
    b.perms.setDocument({ id: "d1", name: "One" });
    b.perms.setSummariesOnly(true);
    a.sock().receive(call("c1", "stats", {}, { redelivery: 1 }));
    await flush();
    assert.deepEqual(a.results("c1").at(-1), refusal(SENTENCES.withheld));
  });

  test("a result waiting for the next socket is held too", async () => {
    const t = setup();
    t.sock().receive(call("c1", "values"));
    await flush();
    t.sock().end(1006);
    t.held.get("c1")!();
    await flush();
    t.perms.setSummariesOnly(true);
    await t.browser.clock.advance(60_000);
    t.sock().welcome();
    assert.deepEqual(t.results("c1"), [refusal(SENTENCES.withheld)]);
  });
});

describe("questions withdrawn (item 5)", () => {
  test("withdraw(reason) and another document end the waiting questions; the agent reads why", async () => {
    const questions: Question[] = [];
    const t = setup({ confirm: (q) => (questions.push(q), new Promise(() => {})) });
    t.perms.setDocument({ id: "d1", name: "One" });
    t.sock().receive(call("c1", "wipe"));
    await flush();
    t.perms.withdraw("a saved state was loaded over the history");
    await flush();
    assert.ok(questions[0]!.signal.aborted);
    assert.deepEqual(t.results("c1"), [refusal("The question to the person about “wipe” was withdrawn (a saved state was loaded over the history); it was not run.")]);
    t.sock().receive(call("c2", "wipe"));
    await flush();
    t.perms.setDocument({ id: "d1", name: "One (renamed)" });
    await flush();
    assert.equal(t.perms.questions.length, 1, "the same document renamed is no other document");
    t.perms.setDocument({ id: "d2", name: "Two" });
    await flush();
    assert.deepEqual(t.results("c2"), [refusal(`The question to the person about “wipe” was withdrawn (${ANOTHER_DOCUMENT}); it was not run.`)]);
    assert.deepEqual(t.runs, []);
  });
});

describe("the notice (item 8)", () => {
  test("due when an agent first acts on a document; Got it is remembered for that document", async () => {
    const site = new FakeSite();
    const t = setup({ site });
    t.perms.setDocument({ id: "d1", name: "One" });
    assert.equal(t.perms.noticeDue, false, "nothing acted yet");
    let heard = 0;
    t.perms.onChange(() => heard++);
    const announced = t.sock().sent("permissions-changed").length;
    t.sock().receive(call("c1", "stats"));
    await flush();
    assert.equal(t.perms.noticeDue, true);
    assert.equal(heard, 1);
    assert.equal(t.sock().sent("permissions-changed").length, announced, "the relay need not hear of a notice");
    t.perms.gotIt();
    assert.equal(t.perms.noticeDue, false);
    t.perms.setDocument({ id: "d2", name: "Two" });
    t.sock().receive(call("c2", "stats"));
    await flush();
    assert.equal(t.perms.noticeDue, true, "another document has its own");
    const later = setup({ site });
    later.perms.setDocument({ id: "d1", name: "One" });
    later.sock().receive(call("c3", "stats"));
    await flush();
    assert.equal(later.perms.noticeDue, false, "remembered for d1 across pages");
  });
});

describe("tools that declare no kinds (item 9)", () => {
  test("a write counts as change (refused in Read only), a destructive one asks; a read runs", async () => {
    const asked: Question[] = [];
    const t = setup({ confirm: (q) => (asked.push(q), Promise.resolve("once")) });
    t.sock().receive(call("c1", "wipe"));
    await flush();
    assert.deepEqual(asked.map((q) => q.kinds), [["deletes-saved"]]);
    t.perms.setMode("read-only");
    t.sock().receive(call("c2", "write"));
    t.sock().receive(call("c3", "later"));
    await flush();
    assert.match(String((t.results("c2")[0] as { notes?: { text: string }[] }).notes?.[0]?.text), /refuse changes/);
    assert.deepEqual(t.runs, ["c1", "c3"]);
  });
});
