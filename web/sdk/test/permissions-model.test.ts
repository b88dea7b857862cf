// The person's permissions, headless (src/ui/permissions-model.ts, src/ui/turns.ts):
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
} from "../src/ui/permissions-model.js";
import { refusal } from "../src/notes.js";
import type { TurnRecord } from "../src/ui/turns.js";
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
    {
      name: "export", title: "Export", description: "Exports all.", inputSchema: { type: "object" }, result: "summaries",
      permissions: ["large-download"], confirmAt: "handler",
    },
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
    // A delete asks before it runs (confirmAt start), so its confirm asks nothing more.
    file: async (c) => (runs.push(c.id), c.step(), await c.confirm("Sure?"), "ok"),
    // It asks once it knows the size.
    export: async (c) => {
      runs.push(c.id);
      await c.confirm("The export is 2.4 MB (8 notes).");
      runs.push(c.id + " exported");
      return "exported";
    },
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
  test("a setting or mode that is none throws and changes nothing: a kind set to \"Deny\" would have let its calls run", async () => {
    const { perms, sock, runs } = setup();
    perms.setMode("read-only");
    const js = perms as unknown as { set(k: string, s: string): void; setMode(m: string): void };
    assert.throws(() => js.set("change", "Deny"), TypeError);
    assert.throws(() => js.set("change", "toString"), TypeError);
    assert.throws(() => js.set("writes", "allow"), TypeError);
    assert.throws(() => js.setMode("toString"), TypeError);
    assert.equal(perms.mode, "read-only");
    sock.receive(call("c1", "edit"));
    await flush();
    assert.deepEqual(runs, [], "the change is still refused");
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

  test("a tab that has not yet heard another's change writes only the kind it sets, and Always only the kinds asked about", async () => {
    const site = new FakeSite();
    const b = setup({ site, confirm: () => Promise.resolve("always") });
    // Another tab wrote, and its storage event has not reached b yet.
    site.storage.setItem("tabrelay:permissions:notes", JSON.stringify({ kinds: { change: "deny", publishes: "deny" }, summariesOnly: false }));
    b.perms.set("heavy", "allow");
    const stored = () => JSON.parse(site.storage.getItem("tabrelay:permissions:notes") ?? "{}").kinds;
    assert.deepEqual(stored(), { change: "deny", publishes: "deny", heavy: "allow" }, "the other tab's change stays");
    setup({ site }).perms.set("change", "allow"); // heard by b
    site.storage.setItem("tabrelay:permissions:notes", JSON.stringify({ kinds: { change: "allow", heavy: "allow", publishes: "deny", "writes-file": "deny" }, summariesOnly: false }));
    b.sock.receive(call("d1", "file", { action: "delete" }));
    await flush();
    assert.deepEqual(b.runs, ["d1"]);
    assert.deepEqual(stored(), { change: "allow", heavy: "allow", publishes: "deny", "writes-file": "deny", "deletes-saved": "allow" }, "Always writes the kind asked about, nothing else");
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
    assert.equal(questions.length, 2, "the handler's confirm of a tool asked about before it asks nothing more");
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

  test("a call that names no connection is granted nothing: This connection lets that call run, and the next one asks again", async () => {
    const answers: ((a: Answer) => void)[] = [];
    const t = setup({ confirm: () => new Promise((r) => answers.push(r)) });
    const nameless = { ...conn, id: "" };
    t.sock.receive({ ...call("c1", "file", { action: "delete" }), connection: nameless });
    await flush();
    answers[0]!("connection");
    await flush();
    assert.deepEqual(t.runs, ["c1"]);
    assert.deepEqual(t.perms.answer({ connection: nameless, tools: ["file"] }), { file: "asks" });
    t.sock.receive({ ...call("c2", "file", { action: "delete" }), connection: nameless });
    await flush();
    assert.equal(answers.length, 2, "the next nameless call asks");
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

describe("two agents at once", () => {
  test("are two lines: each its own who, steps and call now; Stop and Undo turn on one leave the other", async () => {
    const t = setup();
    const undone: string[] = [];
    t.perms.onUndoTurn((turn) => void undone.push(turn.connection.id));
    const chatgpt = { id: "conn_2", kind: "connector", client: "ChatGPT", host: "chatgpt.com" };
    t.sock.receive(call("c1", "edit"));
    t.sock.receive({ ...call("c2", "edit"), connection: chatgpt });
    t.sock.receive({ ...call("c3", "file", { action: "rename" }), connection: chatgpt });
    await flush();
    assert.deepEqual(t.perms.turns.lines.map((l) => l.text), [
      "Claude (claude.ai) · 1 step · now: Edit note",
      "ChatGPT (chatgpt.com) · 2 steps · now: Edit note",
    ]);
    const [claude, other] = t.perms.turns.lines;
    t.perms.turns.stop(other!.key);
    await flush();
    assert.deepEqual(t.perms.turns.lines.map((l) => l.state), ["acting", "stopped"]);
    assert.equal(t.results()["c1"], undefined, "Claude's call still runs");
    assert.match(said(t.results()["c2"]), /stopped this turn/);
    t.finish.get("c1")!();
    await flush();
    assert.deepEqual(t.results()["c1"], { data: "edited" });
    await t.perms.turns.undo(claude!.key);
    assert.deepEqual(undone, ["conn_1"]);
    assert.deepEqual(t.perms.turns.lines.map((l) => [l.who, l.state]), [["Claude (claude.ai)", "undone"], ["ChatGPT (chatgpt.com)", "stopped"]]);
  });
});

describe("Undo turn", () => {
  const personSteps = (t: ReturnType<typeof setup>) => t.sock.sent("step").filter((m) => m["by"] === "person").length;

  test("each step is recorded with its connection and turn; Undo turn shows once the turn is over, only when the app can", async () => {
    const t = setup();
    t.sock.receive(call("c1", "file", { action: "rename" }));
    t.sock.receive(call("c2", "edit"));
    await flush();
    const key = t.perms.turns.lines[0]!.key;
    assert.equal(t.perms.turns.lines[0]!.undoable, false, "no undo registered");
    const undone: TurnRecord[] = [];
    t.perms.onUndoTurn((turn) => void undone.push(turn));
    assert.equal(t.perms.turns.lines[0]!.undoable, false, "a call of the turn still runs");
    t.finish.get("c2")!();
    await flush();
    assert.deepEqual(t.perms.turns.lines.map((l) => [l.state, l.steps, l.undoable]), [["done", 2, true]]);
    assert.equal(personSteps(t), 0);
    await t.perms.turns.undo(key);
    assert.deepEqual(undone, [{
      key, turn: "turn-1", connection: conn,
      steps: [{ call: "c1", tool: "file", action: "rename", title: "File (rename)" }, { call: "c2", tool: "edit", action: undefined, title: "Edit note" }],
    }]);
    const [line] = t.perms.turns.lines;
    assert.deepEqual([line?.state, line?.undoable, line?.text], ["undone", false, "Claude (claude.ai) · 2 steps · undone"]);
    assert.equal(personSteps(t), 1, "the relay hears the person changed something: the agent's turn ends");
    await t.perms.turns.undo(key);
    assert.equal(undone.length, 1, "a turn is undone once");
  });

  test("a turn without steps offers none; an undo that fails says why and may be tried again; an undoable line outlives the next turn", async () => {
    const t = setup();
    let fail = true;
    const undone: string[] = [];
    t.perms.onUndoTurn((turn) => {
      if (fail) throw new Error("The note was changed since.");
      undone.push(turn.turn);
    });
    t.sock.receive(call("c1", "list"));
    await flush();
    assert.deepEqual(t.perms.turns.lines.map((l) => [l.steps, l.undoable]), [[0, false]]);
    t.sock.receive(call("c2", "file", { action: "rename" }, "turn-2"));
    await flush();
    const key = t.perms.turns.lines[0]!.key;
    assert.deepEqual(t.perms.turns.lines.map((l) => [l.turn, l.undoable]), [["turn-2", true]], "turn-1 made no step: replaced");
    await t.perms.turns.undo(key);
    assert.equal(t.perms.turns.lines[0]?.text, "Claude (claude.ai) · 1 step · done · could not be undone: The note was changed since.");
    assert.equal(t.perms.turns.lines[0]?.undoable, true);
    assert.equal(personSteps(t), 0, "nothing changed: the turn goes on");
    t.sock.receive(call("c3", "list", {}, "turn-3"));
    await flush();
    assert.deepEqual(t.perms.turns.lines.map((l) => l.turn), ["turn-2", "turn-3"], "the person may still undo turn-2");
    fail = false;
    await t.perms.turns.undo(key);
    assert.deepEqual(undone, ["turn-2"]);
    assert.equal(t.perms.turns.lines[0]?.state, "undone");
  });
});

describe("asking from the handler (confirmAt: handler)", () => {
  test("the handler asks once it knows the cost: its sentence leads the card's why; Allow once goes on, Deny refuses", async () => {
    const questions: Question[] = [];
    const answers: ((a: Answer) => void)[] = [];
    const t = setup({ confirm: (q) => (questions.push(q), q.showing(), new Promise((r) => answers.push(r))) });
    t.sock.receive(call("c1", "export"));
    await flush();
    assert.deepEqual(t.runs, ["c1"], "the handler runs before anyone is asked");
    assert.deepEqual([questions[0]?.stage, questions[0]?.title, questions[0]?.kinds], ["handler", "Export", ["large-download"]]);
    assert.deepEqual(questions[0]?.reasons, ["The export is 2.4 MB (8 notes).", "It downloads a large amount of data."]);
    assert.deepEqual(t.sock.sent().filter((m) => m["id"] === "c1").map((m) => m["type"]), ["asking"], "the relay's asking and detach rule applies");
    answers[0]!("once");
    await flush();
    assert.deepEqual(t.results()["c1"], { data: "exported" });
    t.sock.receive(call("c2", "export"));
    await flush();
    answers[1]!("deny");
    await flush();
    assert.deepEqual(t.results()["c2"], refusal("The person declined to let {0} run “Export”.", "Claude (claude.ai)"));
    assert.deepEqual(t.runs, ["c1", "c1 exported", "c2"]);
  });

  test("the same settings, grants and moot rules as a question before the handler", async () => {
    const questions: Question[] = [];
    const answers: ((a: Answer) => void)[] = [];
    const t = setup({ confirm: (q) => (questions.push(q), new Promise((r) => answers.push(r))) });
    t.sock.receive(call("c1", "export"));
    await flush();
    t.sock.receive({ type: "cancel", id: "c1", reason: "timeout" });
    await flush();
    assert.ok(questions[0]!.signal.aborted, "a cancelled call's question is moot");
    t.sock.receive(call("c2", "export", {}, "turn-2"));
    await flush();
    t.perms.turns.stop(t.perms.turns.lines.find((l) => l.turn === "turn-2")!.key);
    await flush();
    assert.ok(questions[1]!.signal.aborted, "Stop withdraws the card");
    assert.match(said(t.results()["c2"]), /stopped this turn/);
    t.sock.receive(call("c3", "export", {}, "turn-3"));
    await flush();
    answers[2]!("connection");
    await flush();
    t.sock.receive(call("c4", "export", {}, "turn-3"));
    await flush();
    assert.equal(questions.length, 3, "This connection: its next export asks no more");
    assert.deepEqual([t.results()["c3"], t.results()["c4"]], [{ data: "exported" }, { data: "exported" }]);
    t.perms.setMode("read-only");
    t.sock.receive(call("c5", "export", {}, "turn-4"));
    await flush();
    assert.match(said(t.results()["c5"]), /refuse large downloads to agents, so “Export” was not run/);
    assert.ok(!t.runs.includes("c5"), "a refused kind is refused before the handler runs");
    assert.ok(!t.runs.includes("c1 exported") && !t.runs.includes("c2 exported"));
  });

  test("a tool asked about before its handler asks nothing more; without a confirmer or without permissions, the handler cannot go on", async () => {
    const questions: Question[] = [];
    const t = setup({ confirm: (q) => (questions.push(q), Promise.resolve("once")) });
    t.perms.setConfirmer(null);
    t.sock.receive(call("c1", "export"));
    await flush();
    assert.deepEqual(t.results()["c1"], refusal("“Export” needs the person's confirmation, and this tab has no way to ask; it was not run."));
    const browser = new FakeBrowser();
    const bare = browser.tab({
      app, handlers: {
        list: async (c) => (await c.confirm("Sure?"), "ok"), cells: () => 1, edit: () => 1, file: () => 1, render: () => 1, export: () => 1,
      },
    });
    bare.client.start();
    bare.relay.last.welcome();
    bare.relay.last.receive(call("b1", "list"));
    await flush();
    assert.deepEqual(bare.relay.last.sent("result")[0]?.["result"], { error: "This tab cannot ask the person; the call did not go on." });
  });
});

