// The person's permissions, headless (src/ui/permissions.ts, src/ui/turns.ts):
// the decision table, modes, storage across tabs, permissions-query answers,
// the calls they refuse, run or ask about, the questions' moot rules, the
// activity of turns and Stop, and the data switch.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { defineApp } from "../src/tools.js";
import type { Handlers, ToolCall } from "../src/calls.js";
import {
  createPermissions, decide, HEAVY_MS, MODES,
  type Answer, type Question,
} from "../src/ui/permissions.js";
import { refusal } from "../src/notes.js";
import { said } from "./app.js";
import { FakeBrowser, FakeSite, flush } from "./fakes.js";

const app = defineApp({
  version: "perm-1", app: { name: "notes", title: "Notes" }, instructions: "Notes tools.",
  tools: [
    { name: "list", description: "Lists notes.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true }, result: "summaries" },
    { name: "cells", description: "Reads cell values.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true }, result: "cells" },
    { name: "edit", title: "Edit note", description: "Edits a note.", inputSchema: { type: "object" }, result: "none", permissions: ["change"] },
    {
      name: "file", title: "File", description: "Saved files.", result: "none",
      inputSchema: { type: "object", properties: { action: { type: "string" } } },
      permissions: ["change"],
      actions: [{ name: "rename" }, { name: "delete", permissions: ["change", "deletes-saved"] }],
    },
    { name: "render", title: "Render", description: "Renders all.", inputSchema: { type: "object" }, result: "none", permissions: ["heavy"] },
  ],
});

const conn = { id: "conn_1", kind: "connector", client: "Claude", host: "claude.ai" };

function call(id: string, tool: string, args: Record<string, unknown> = {}, turn = "turn-1") {
  return { type: "call", id, tool, arguments: args, connection: conn, turn, deadline: 1_767_225_600_000 + 225_000 };
}

function setup(o: { confirm?: (q: Question) => Promise<Answer>; site?: FakeSite; render?: () => number | undefined } = {}) {
  const site = o.site ?? new FakeSite();
  const runs: string[] = [];
  const finish = new Map<string, () => void>();
  const perms = createPermissions({
    app, environment: site.env(), ...(o.confirm ? { confirm: o.confirm } : {}),
    ...(o.render ? { estimates: { render: o.render } } : {}),
  });
  const run = (c: ToolCall) => (runs.push(c.id), "ok");
  const handlers: Handlers<typeof app> = {
    list: run, cells: run, render: run,
    edit: (c) => (runs.push(c.id), c.step(), new Promise<string>((resolve) => finish.set(c.id, () => resolve("edited")))),
    file: run,
  };
  const browser = new FakeBrowser();
  const tab = browser.tab({ app, handlers, permissions: perms });
  tab.client.start();
  tab.relay.last.welcome();
  const sock = tab.relay.last;
  const results = () => Object.fromEntries(sock.sent("result").map((m) => [m["id"], m["result"]]));
  return { site, perms, runs, finish, sock, results, relay: tab.relay, clock: browser.clock };
}

describe("the decision", () => {
  const d = MODES["ask-heavy-irreversible"].settings;
  test("the strictest kind decides, and names the kinds that decided", () => {
    assert.deepEqual(decide(d, [], true), { setting: "allow", kinds: [] });
    assert.deepEqual(decide(d, ["change"], true), { setting: "allow", kinds: [] });
    assert.deepEqual(decide(d, ["change", "deletes-saved"], true), { setting: "ask", kinds: ["deletes-saved"] });
    const ro = MODES["read-only"].settings;
    assert.deepEqual(decide(ro, ["heavy", "change", "publishes"], true), { setting: "deny", kinds: ["change", "publishes"] });
  });
  test("heavy counts only when the work is heavy; a grant answers an ask, never a deny", () => {
    assert.equal(decide(d, ["heavy"], false).setting, "allow");
    assert.equal(decide(d, ["heavy"], true).setting, "ask");
    assert.equal(decide(d, ["heavy"], true, new Set(["heavy"])).setting, "allow");
    assert.equal(decide(MODES["read-only"].settings, ["change"], true, new Set(["change"])).setting, "deny");
  });
  test("the modes are presets; another setting is custom", () => {
    const { perms } = setup();
    assert.equal(perms.mode, "ask-heavy-irreversible");
    perms.setMode("read-only");
    assert.equal(perms.mode, "read-only");
    perms.set("heavy", "deny");
    assert.equal(perms.mode, "custom");
  });
});

describe("settings kept per app, followed by the browser's other tabs", () => {
  test("a setting one tab makes, another tab follows; only the tab that made it announces it to the relay", async () => {
    const site = new FakeSite();
    const a = setup({ site });
    const b = setup({ site });
    const heard: boolean[] = [];
    b.perms.onChange((mine) => heard.push(mine));
    a.perms.setMode("allow-undoable");
    assert.equal(b.perms.mode, "allow-undoable");
    assert.deepEqual(heard, [false], "b's own UI still hears it");
    assert.match(site.storage.getItem("tabrelay:permissions:notes") ?? "", /"heavy":"allow"/);
    assert.equal(b.sock.sent("permissions-changed").length, 0);
    assert.equal(a.sock.sent("permissions-changed").length, 1);
    // A page made later reads them.
    assert.equal(setup({ site }).perms.mode, "allow-undoable");
  });
});

describe("permissions-changed", () => {
  test("a question is no change: a confirm card sends nothing; its answer This connection does", async () => {
    let answer: (a: Answer) => void = () => {};
    const t = setup({ confirm: () => new Promise((resolve) => (answer = resolve)) });
    let questions = 0;
    t.perms.onQuestions(() => questions++);
    t.sock.receive(call("c1", "file", { action: "delete" }));
    await flush();
    assert.equal(t.perms.questions.length, 1);
    assert.equal(t.sock.sent("permissions-changed").length, 0);
    answer("connection");
    await flush();
    assert.equal(questions, 2, "the question came and went");
    assert.equal(t.sock.sent("permissions-changed").length, 1);
  });

  test("changes made while disconnected are announced once, after the next welcome", async () => {
    const t = setup();
    t.sock.end(1006);
    t.perms.setMode("read-only");
    t.perms.setSummariesOnly(true);
    const { clock } = t;
    await clock.advance(60_000);
    const next = t.relay.last;
    assert.notEqual(next, t.sock);
    next.welcome();
    assert.equal(next.sent("permissions-changed").length, 1);
    next.end(1006);
    await clock.advance(60_000);
    t.relay.last.welcome();
    assert.equal(t.relay.last.sent("permissions-changed").length, 0, "once, not at every welcome");
  });
});

describe("calls", () => {
  test("allow runs; deny refuses with one sentence; no confirmer refuses what asks", async () => {
    const t = setup();
    t.perms.setMode("read-only");
    t.sock.receive(call("c1", "list"));
    t.sock.receive(call("c2", "file", { action: "rename" }));
    t.sock.receive(call("c3", "render"));
    await flush();
    assert.deepEqual(t.runs, ["c1"]);
    const r = t.results();
    assert.deepEqual(r["c1"], { data: "ok" });
    assert.deepEqual(r["c2"], refusal("The person's settings in this tab refuse changes to agents, so “File (rename)” was not run."));
    assert.match(said(r["c3"]), /needs the person's confirmation/);
  });

  test("heavy asks only when its estimate is 10 s or more", async () => {
    let ms: number | undefined = HEAVY_MS - 1;
    const asked: Question[] = [];
    const t = setup({ render: () => ms, confirm: (q) => (asked.push(q), Promise.resolve("once")) });
    t.sock.receive(call("c1", "render"));
    await flush();
    ms = 30_000;
    t.sock.receive(call("c2", "render"));
    await flush();
    assert.deepEqual(asked.map((q) => q.id), ["c2"]);
    assert.deepEqual(asked[0]?.reasons, ["It is heavy work: about 30 s on this device."]);
    assert.deepEqual(t.runs, ["c1", "c2"]);
  });

  test("a question says who, what and why; asking and answered go to the relay; Deny answers one sentence", async () => {
    let answer!: (a: Answer) => void;
    let question!: Question;
    const t = setup({ confirm: (q) => ((question = q), q.showing(), new Promise((r) => (answer = r))) });
    t.sock.receive(call("c1", "file", { action: "delete", name: "draft" }));
    await flush();
    assert.equal(question.who, "Claude (claude.ai)");
    assert.equal(question.title, "File (delete)");
    assert.deepEqual(question.kinds, ["deletes-saved"]);
    assert.deepEqual(question.reasons, ["It deletes something saved."]);
    assert.match(question.details, /"name": "draft"/);
    assert.deepEqual(t.sock.sent().filter((m) => m["id"] === "c1").map((m) => m["type"]), ["asking"]);
    answer("deny");
    await flush();
    assert.deepEqual(t.sock.sent().filter((m) => m["id"] === "c1").map((m) => m["type"]), ["asking", "answered", "result"]);
    // The client's name is others' words: a name the relay marks as data, after the data (issue 24 item 7).
    assert.deepEqual(t.results()["c1"], refusal("The person declined to let {0} run “File (delete)”.", "Claude (claude.ai)"));
    assert.ok(question.signal.aborted);
    assert.deepEqual(t.runs, []);
  });

  test("This connection lets that connection's other questions of the kind run; Always sets the kind to Allow", async () => {
    const questions: Question[] = [];
    const answers: ((a: Answer) => void)[] = [];
    const t = setup({ confirm: (q) => (questions.push(q), new Promise((r) => answers.push(r))) });
    t.sock.receive(call("c1", "file", { action: "delete" }));
    t.sock.receive(call("c2", "file", { action: "delete" }));
    await flush();
    assert.equal(t.perms.questions.length, 2);
    answers[0]!("connection");
    await flush();
    assert.deepEqual(t.runs.sort(), ["c1", "c2"]);
    assert.ok(questions[1]!.signal.aborted, "the second card went with the grant");
    assert.deepEqual(t.perms.answer({ connection: conn, tools: ["file"] }), { file: "runs" });
    assert.deepEqual(t.perms.answer({ connection: { ...conn, id: "conn_2" }, tools: ["file"] }), { file: "asks" });
    t.sock.receive({ ...call("c3", "render"), connection: { ...conn, id: "conn_2" } });
    await flush();
    answers[2]!("always");
    await flush();
    assert.equal(t.perms.settings.heavy, "allow");
    assert.deepEqual(t.runs.sort(), ["c1", "c2", "c3"]);
  });

  test("a question is moot once its call is cancelled or timed out, or the tab closes", async () => {
    const questions: Question[] = [];
    const site = new FakeSite();
    const t = setup({ site, confirm: (q) => (questions.push(q), new Promise(() => {})) });
    t.sock.receive(call("c1", "file", { action: "delete" }));
    t.sock.receive(call("c2", "file", { action: "delete" }));
    await flush();
    t.sock.receive({ type: "cancel", id: "c1", reason: "timeout" });
    await flush();
    assert.ok(questions[0]!.signal.aborted);
    assert.ok(!questions[1]!.signal.aborted);
    site.closeTab();
    await flush();
    assert.ok(questions[1]!.signal.aborted);
    assert.deepEqual(t.results(), { c2: refusal("The tab closed before the person answered; “File (delete)” was not run.") });
    assert.deepEqual(t.runs, []);
  });
});

describe("permissions-query", () => {
  test("each tool: runs, asks or refused, for that connection", () => {
    const t = setup();
    t.sock.receive({ type: "permissions-query", id: "q1", connection: conn, tools: ["list", "edit", "file", "render", "nope"] });
    assert.deepEqual(t.sock.sent("permissions")[0]?.["tools"], { list: "runs", edit: "runs", file: "asks", render: "asks" });
    t.perms.setMode("read-only");
    assert.deepEqual(t.perms.answer({ connection: conn, tools: ["list", "edit", "file"] }), { list: "runs", edit: "refused", file: "refused" });
  });
});

describe("turns and Stop", () => {
  test("one line per turn: who, steps, what now; Stop answers the pending calls and refuses the turn's next", async () => {
    const t = setup({ confirm: () => new Promise(() => {}) });
    t.sock.receive(call("c1", "edit"));
    t.sock.receive(call("c2", "file", { action: "delete" }));
    await flush();
    const [line] = t.perms.turns.lines;
    assert.equal(line?.text, "Claude (claude.ai) · 1 step · now: Edit note, File (delete)");
    t.perms.turns.stop(line!.key);
    await flush();
    t.sock.receive(call("c3", "list"));
    await flush();
    const stopped = refusal("The person stopped this turn in the tab; “Edit note” was not run or did not finish.");
    assert.deepEqual(t.results()["c1"], stopped);
    assert.match(said(t.results()["c2"]), /stopped this turn/);
    assert.match(said(t.results()["c3"]), /stopped this turn/);
    assert.equal(t.perms.questions.length, 0, "Stop withdrew the card");
    assert.equal(t.perms.turns.lines[0]?.state, "stopped");
    // The relay is told, so it ends the turn (§12); until its next turn, the stopped turn's calls are refused, dismissed or not.
    assert.deepEqual(t.sock.sent("step").filter((m) => m["by"] === "person"), [{ type: "step", by: "person" }]);
    t.perms.turns.dismiss(line!.key);
    t.sock.receive(call("c3b", "list"));
    await flush();
    assert.match(said(t.results()["c3b"]), /stopped this turn/);
    // The agent's next turn is a new line in place of the old.
    t.sock.receive(call("c4", "list", {}, "turn-2"));
    await flush();
    assert.deepEqual(t.perms.turns.lines.map((l) => [l.turn, l.state, l.calls]), [["turn-2", "done", 1]]);
    assert.deepEqual(t.results()["c4"], { data: "ok" });
  });
});
