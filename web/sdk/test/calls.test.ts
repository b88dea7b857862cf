import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { CallCancelled, Reply } from "../src/calls.js";
import type { PermissionsGate } from "../src/client.js";
import { refusal } from "../src/notes.js";
import { app, callMsg, said, TestHandlers } from "./app.js";
import { FakeBrowser, flush } from "./fakes.js";

async function connected(extra = {}, options = {}) {
  const browser = new FakeBrowser();
  const h = new TestHandlers();
  const tab = browser.tab({ app, handlers: h.handlers, ...options }, extra);
  tab.client.start();
  tab.relay.last.welcome();
  return { browser, h, ...tab, sock: () => tab.relay.last };
}

/** results returns the results the tab sent on its current socket, by call id. */
function results(sock: { sent(type?: string): Record<string, unknown>[] }) {
  return Object.fromEntries(sock.sent("result").map((m) => [m["id"], m["result"]]));
}

describe("dispatch", () => {
  test("a call reaches its tool's handler with the arguments, connection, turn and deadline", async () => {
    const t = await connected();
    t.sock().receive(callMsg("c1", "echo", { value: 3 }, { redelivery: 0 }));
    await flush();
    const [call] = t.h.runs;
    assert.equal(call?.tool, "echo");
    assert.deepEqual(call?.arguments, { value: 3 });
    assert.deepEqual(call?.connection, { id: "conn_1", kind: "connector", client: "Claude", host: "claude.ai" });
    assert.equal(call?.turn, "turn-1");
    assert.equal(call?.deadline, 1_767_225_825_000);
    assert.deepEqual(results(t.sock()), { c1: { data: { value: 3 } } });
  });

  test("a tool with actions is dispatched by its action; a change sends step by its connection", async () => {
    const t = await connected();
    t.sock().receive(callMsg("c1", "counter", { action: "increment", by: 2 }));
    t.sock().receive(callMsg("c2", "counter", { action: "get" }));
    await flush();
    assert.deepEqual(t.h.runs.map((c) => c.action), ["increment", "get"]);
    assert.deepEqual(results(t.sock()), { c1: { data: { counter: 2 } }, c2: { data: { counter: 2 } } });
    assert.deepEqual(t.sock().sent("step"), [{ type: "step", by: "conn_1" }]);
  });

  test("the person's own change sends step by person", async () => {
    const t = await connected();
    t.client.step();
    assert.deepEqual(t.sock().sent("step"), [{ type: "step", by: "person" }]);
  });

  test("results: a Reply carries pictures, a ToolError the app's sentence", async () => {
    const t = await connected();
    t.sock().receive(callMsg("c1", "picture"));
    t.sock().receive(callMsg("c2", "fail"));
    await flush();
    assert.deepEqual(results(t.sock()), {
      c1: { data: { w: 1 }, images: [{ mimeType: "image/png", data: "iVBORw0KGgo=" }] },
      c2: { error: "The counter is locked." },
    });
  });

  test("progress, log, asking and answered go out while the call runs, and not after its result", async () => {
    const t = await connected();
    t.sock().receive(callMsg("c1", "slow"));
    await flush();
    const call = t.h.runs[0]!;
    call.asking();
    call.answered();
    call.progress(1, 4, "one of four");
    call.log("info", "reading");
    t.h.finish("c1", "ok");
    await flush();
    call.progress(2, 4);
    assert.deepEqual(t.sock().sent().slice(1).map((m) => m["type"]), ["asking", "answered", "progress", "log", "result"]);
    assert.deepEqual(t.sock().sent("progress"), [{ type: "progress", id: "c1", progress: 1, total: 4, message: "one of four" }]);
    assert.deepEqual(t.sock().sent("log"), [{ type: "log", id: "c1", level: "info", data: "reading" }]);
  });

  test("log data that is no JSON value goes as null: the relay would close with 4103 on a log without data", async () => {
    const t = await connected();
    t.sock().receive(callMsg("c1", "slow"));
    await flush();
    const call = t.h.runs[0]!;
    call.log("info", () => 1);
    call.log("info", undefined);
    call.log("info", Symbol("s"));
    call.log("info", false);
    assert.deepEqual(t.sock().sent("log").map((m) => m["data"]), [null, null, null, false]);
  });

  test("cancel fires the call's AbortSignal with its reason, and no result is sent", async () => {
    const t = await connected();
    t.sock().receive(callMsg("c1", "slow"));
    await flush();
    const { signal } = t.h.runs[0]!;
    t.sock().receive({ type: "cancel", id: "c1", reason: "timeout" });
    assert.ok(signal.aborted);
    assert.ok(signal.reason instanceof CallCancelled);
    assert.equal((signal.reason as CallCancelled).reason, "timeout");
    t.h.finish("c1", "late");
    await flush();
    assert.deepEqual(t.sock().sent("result"), []);
  });

  test("a cancel for a call the tab does not know is ignored", async () => {
    const t = await connected();
    t.sock().receive({ type: "cancel", id: "nobody", reason: "answered" });
    assert.equal(t.client.status.state, "connected");
  });

  test("a result ready while disconnected is sent after the next welcome", async () => {
    const t = await connected();
    t.sock().receive(callMsg("c1", "slow"));
    await flush();
    t.sock().end(1006);
    t.h.finish("c1", { late: true });
    await flush();
    await t.browser.clock.advance(1000);
    t.sock().welcome();
    assert.deepEqual(results(t.sock()), { c1: { data: { late: true } } });
  });

  test("a permissions-query is answered at once, by the app's permissions option", async () => {
    const t = await connected({}, { permissions: () => ({ echo: "runs", counter: "asks", slow: "bogus" }) });
    t.sock().receive({ type: "permissions-query", id: "q1", connection: { id: "conn_1" }, tools: ["echo", "counter", "slow"] });
    assert.deepEqual(t.sock().sent("permissions"), [{ type: "permissions", id: "q1", tools: { echo: "runs", counter: "asks" } }]);
  });

  test("the gate's sending sees the action checkToolCall decided: as the call ran, as it went out, and answered again", async () => {
    const seen: Record<string, (string | undefined)[]> = {};
    const gate: PermissionsGate = {
      answer: () => ({}), onChange: () => () => {},
      run: (call, _tool, next) => next(call),
      sending: (call, result) => ((seen[call.id] ??= []).push(call.action), result),
    };
    const t = await connected({}, { permissions: gate });
    // echo declares no actions: an "action" among its arguments is an argument like any other.
    t.sock().receive(callMsg("c1", "echo", { action: "delete" }));
    t.sock().receive(callMsg("c2", "counter", { action: "get" }));
    await flush();
    t.sock().receive(callMsg("c1", "echo", { action: "delete" }, { redelivery: 1 }));
    t.sock().receive(callMsg("c2", "counter", { action: "get" }, { redelivery: 1 }));
    await flush();
    assert.equal(t.h.runs.length, 2, "the redeliveries are answered from memory");
    assert.deepEqual(seen, { c1: [undefined, undefined, undefined], c2: ["get", "get", "get"] });
    assert.deepEqual(t.h.runs.map((c) => c.action), [undefined, "get"]);
  });

  test("without the option, a permissions-query is answered with every tool unknown", async () => {
    const t = await connected();
    t.sock().receive({ type: "permissions-query", id: "q1", tools: ["echo"] });
    assert.deepEqual(t.sock().sent("permissions"), [{ type: "permissions", id: "q1", tools: {} }]);
  });

  test("handlers must match the declared tools", () => {
    const browser = new FakeBrowser();
    const h = new TestHandlers();
    const { echo: _, ...missing } = h.handlers;
    assert.throws(() => browser.tab({ app, handlers: missing as typeof h.handlers }), /no handler for the tool echo/);
    assert.throws(() => browser.tab({ app, handlers: { ...h.handlers, extra: () => 1 } as typeof h.handlers }), /does not declare/);
    assert.throws(
      () => browser.tab({ app, handlers: { ...h.handlers, counter: { get: () => 1 } } as unknown as typeof h.handlers }),
      /no handler for the action increment/,
    );
  });
});

describe("bad input from the relay", () => {
  test("a call for an undeclared tool gets an error result", async () => {
    const t = await connected();
    t.sock().receive(callMsg("c1", "format_disk"));
    await flush();
    // The tool's name is the agent's: a name the relay marks as data, after the data (issue 24 item 7).
    assert.deepEqual(results(t.sock()), { c1: refusal("This app has no tool {0}; nothing was done.", "format_disk") });
    assert.equal(t.h.runs.length, 0);
  });

  test("an unknown action, or none, gets an error result naming the actions", async () => {
    const t = await connected();
    t.sock().receive(callMsg("c1", "counter", { action: "explode" }));
    t.sock().receive(callMsg("c2", "counter"));
    await flush();
    const r = results(t.sock());
    assert.match(said(r["c1"]), /one of: get, increment/);
    assert.match(said(r["c2"]), /needs an "action"/);
    assert.equal(t.h.runs.length, 0);
  });

  test("arguments that are not an object, or too large, get an error result", async () => {
    const t = await connected({}, { maxArgumentBytes: 1000 });
    t.sock().receive(callMsg("c1", "echo", [1, 2]));
    t.sock().receive(callMsg("c2", "echo", { text: "x".repeat(2000) }));
    t.sock().receive(callMsg("c3", "echo", { text: "x".repeat(500) }));
    await flush();
    const r = results(t.sock());
    assert.match(said(r["c1"]), /must be a JSON object/);
    assert.match(said(r["c2"]), /larger than the 1000 bytes/);
    assert.deepEqual(r["c3"], { data: { text: "x".repeat(500) } });
  });

  test("a result too large for a message is replaced by an error result, not sent to be closed with 1009", async () => {
    const t = await connected();
    t.sock().receive({ type: "welcome" }); // a second welcome changes nothing
    t.sock().receive(callMsg("c1", "slow"));
    await flush();
    t.h.finish("c1", "x".repeat(17 * 1024 * 1024));
    await flush();
    assert.match(said(results(t.sock())["c1"]), /too large to send/);
  });

  test("a Reply of the wrong shape gets an error result, not a socket closed with 4103", async () => {
    const browser = new FakeBrowser();
    const h = new TestHandlers();
    const bad = { ...h.handlers, picture: () => new Reply({ images: [{ mimeType: "image/png" }] as never }) };
    const tab = browser.tab({ app, handlers: bad });
    tab.client.start();
    tab.relay.last.welcome();
    tab.relay.last.receive(callMsg("c1", "picture"));
    await flush();
    assert.deepEqual(results(tab.relay.last), { c1: refusal("The tool's result could not be sent: its images list is malformed.") });
  });

  test("progress that is not a number is dropped with a warning", async () => {
    const t = await connected();
    t.sock().receive(callMsg("c1", "slow"));
    await flush();
    t.h.runs[0]!.progress("half" as unknown as number);
    assert.deepEqual(t.sock().sent("progress"), []);
    assert.ok(t.browser.warnings.some((w) => w.includes("progress must be a finite number")));
  });

  test("arguments are measured in UTF-8 bytes, as the relay counts", async () => {
    const t = await connected({}, { maxArgumentBytes: 3000 });
    t.sock().receive(callMsg("c1", "echo", { text: "語".repeat(1500) })); // 1,500 units, 4,500 bytes
    await flush();
    assert.match(said(results(t.sock())["c1"]), /larger than the 3000 bytes/);
  });

  test("a result that is not JSON gets an error result", async () => {
    const t = await connected();
    t.sock().receive(callMsg("c1", "slow"));
    await flush();
    const cycle: Record<string, unknown> = {};
    cycle["self"] = cycle;
    t.h.finish("c1", cycle);
    await flush();
    assert.match(said(results(t.sock())["c1"]), /not JSON/);
  });

  test("a result nested deeper than the browser writes gets an error result that says so", async () => {
    // Firefox stops writing JSON between 4,000 and 5,000 levels ("too much
    // recursion"), and said the result was "a cycle or a BigInt".
    const t = await connected();
    t.sock().receive(callMsg("c1", "slow"));
    await flush();
    let deep: unknown = [];
    for (let i = 0; i < 1_000_000; i++) deep = [deep];
    t.h.finish("c1", deep);
    await flush();
    assert.match(said(results(t.sock())["c1"]), /not JSON \(a cycle, a BigInt, or nesting deeper than this browser writes\)/);
  });

  test("malformed frames, unknown types, binary frames and calls without ids are ignored with a warning", async () => {
    const t = await connected();
    const sock = t.sock();
    sock.receive("{not json");
    sock.receive("[1,2]");
    sock.receive({ no: "type" });
    sock.receive({ type: "x-new-feature", ref: "r9" });
    sock.onmessage?.({ data: new Uint8Array([1, 2]) });
    sock.receive({ type: "call", tool: "echo" });
    sock.receive({ type: "call", id: 7, tool: "echo" });
    sock.receive({ type: "drain" }); // no delay: reconnect at once, still no exception
    await flush();
    assert.equal(t.h.runs.length, 0);
    assert.deepEqual(sock.sent("result"), []);
    assert.equal(t.client.status.state, "reconnecting");
    assert.ok(t.browser.warnings.some((w) => w.includes("x-new-feature")));
    assert.ok(t.browser.warnings.some((w) => w.includes("binary")));
    assert.ok(t.browser.warnings.some((w) => w.includes("not a JSON message")));
  });

  test("a handler that throws an unexpected error answers with its message; the client goes on", async () => {
    const browser = new FakeBrowser();
    const h = new TestHandlers();
    const tab = browser.tab({ app, handlers: { ...h.handlers, echo: () => { throw new RangeError("boom"); } } });
    tab.client.start();
    tab.relay.last.welcome();
    tab.relay.last.receive(callMsg("c1", "echo"));
    await flush();
    assert.deepEqual(results(tab.relay.last), { c1: { error: "The tool failed in the tab: boom" } });
    tab.relay.last.receive({ type: "ping" });
    assert.equal(tab.relay.last.sent("pong").length, 1);
  });

  test("a message before the welcome is ignored", async () => {
    const browser = new FakeBrowser();
    const h = new TestHandlers();
    const tab = browser.tab({ app, handlers: h.handlers });
    tab.client.start();
    tab.relay.last.open();
    tab.relay.last.receive(callMsg("c1", "echo"));
    await flush();
    assert.equal(h.runs.length, 0);
  });

  test("a status listener that throws does not stop the client", async () => {
    const browser = new FakeBrowser();
    const h = new TestHandlers();
    const tab = browser.tab({ app, handlers: h.handlers });
    tab.client.onStatus(() => {
      throw new Error("listener bug");
    });
    tab.client.start();
    tab.relay.last.welcome();
    assert.equal(tab.client.status.state, "connected");
  });
});
