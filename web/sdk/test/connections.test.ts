import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { RelayError, type ConnectionInfo, type ScopeEntry } from "../src/requests.js";
import { connectionWords, ConnectionsPanel, scopeWords, shortId, type ConnectionsClient } from "../src/ui/connections-model.js";
import { en } from "../src/ui/messages-en.js";
import { app, TestHandlers } from "./app.js";
import { FakeBrowser, flush } from "./fakes.js";

const T0 = 1_767_225_600_000;
const conn = (id: string, client: string, createdAt: number, scope: ScopeEntry[] = [{ tool: "echo" }]): ConnectionInfo =>
  ({ id, client, host: client.toLowerCase() + ".test", createdAt, lastUsedAt: createdAt, scope });
const A = conn("conn_a", "Claude", T0, [{ tool: "echo" }, { tool: "counter", actions: ["get"] }]);
const B = conn("conn_b", "Other", T0 + 1000, [{ tool: "counter", actions: ["*"] }]);

function connected() {
  const browser = new FakeBrowser();
  const t = browser.tab({ app, handlers: new TestHandlers().handlers });
  t.client.start();
  t.relay.last.welcome();
  return { browser, ...t };
}

/** answerList answers the socket's last list-connections with list. */
function answerList(ws: { sent(type: string): Record<string, unknown>[]; receive(m: unknown): void }, list: ConnectionInfo[]) {
  const req = ws.sent("list-connections").at(-1);
  assert.ok(req, "a list-connections was sent");
  ws.receive({ type: "connections", ref: req["ref"], connections: list });
}

describe("the client hears connections", () => {
  test("a pushed connections (no ref) reaches every listener and is kept", () => {
    const t = connected();
    const heard: (readonly ConnectionInfo[])[] = [];
    assert.equal(t.client.connections, undefined, "unknown before any list");
    t.client.onConnections((l) => heard.push(l));
    t.relay.last.receive({ type: "connections", connections: [A] });
    t.relay.last.receive({ type: "connections", connections: [] });
    assert.deepEqual(heard, [[A], []]);
    assert.deepEqual(t.client.connections, []);
    assert.deepEqual(t.browser.warnings, []);
    // A late subscriber hears the list now.
    const late: (readonly ConnectionInfo[])[] = [];
    t.client.onConnections((l) => late.push(l));
    assert.deepEqual(late, [[]]);
  });

  test("an answer to a list-connections sent before a push is older than it: the push stands; a push with no list is ignored", async () => {
    const t = connected();
    const heard: (readonly ConnectionInfo[])[] = [];
    t.client.onConnections((l) => heard.push(l));
    const answer = t.client.listConnections();
    t.relay.last.receive({ type: "connections", connections: [B] });
    answerList(t.relay.last, [A]);
    assert.deepEqual(await answer, [B]);
    assert.deepEqual(t.client.connections, [B]);
    assert.deepEqual(heard, [[B]]);
    t.relay.last.receive({ type: "connections", connections: "garbled" });
    assert.deepEqual(t.client.connections, [B]);
    assert.deepEqual(heard, [[B]]);
  });

  test("every listConnections answer reaches the listeners too", async () => {
    const t = connected();
    const heard: (readonly ConnectionInfo[])[] = [];
    t.client.onConnections((l) => heard.push(l));
    const answer = t.client.listConnections();
    answerList(t.relay.last, [A, B]);
    assert.deepEqual(await answer, [A, B]);
    assert.deepEqual(heard.at(-1), [A, B]);
    assert.deepEqual(t.client.connections, [A, B]);
  });

  test("each welcome asks for the list once while anyone listens: a push lost with a socket is made good", async () => {
    const t = connected();
    assert.equal(t.relay.last.sent("list-connections").length, 0, "nobody listens: nothing asked");
    const heard: (readonly ConnectionInfo[])[] = [];
    const unsubscribe = t.client.onConnections((l) => heard.push(l));
    t.relay.last.end(1006);
    await t.browser.clock.advance(1000);
    t.relay.last.welcome();
    assert.equal(t.relay.last.sent("list-connections").length, 1);
    answerList(t.relay.last, [B]);
    await flush();
    assert.deepEqual(heard, [[B]]);
    unsubscribe();
    t.relay.last.receive({ type: "connections", connections: [A] });
    assert.deepEqual(heard, [[B]], "an unsubscribed listener hears nothing");
    t.relay.last.end(1006);
    await t.browser.clock.advance(1000);
    t.relay.last.welcome();
    assert.equal(t.relay.last.sent("list-connections").length, 0, "nobody listens any more");
  });

  test("a listener that throws does not stop the others or the client; malformed lists are read safely", () => {
    const t = connected();
    const heard: (readonly ConnectionInfo[])[] = [];
    t.client.onConnections(() => {
      throw new Error("app bug");
    });
    t.client.onConnections((l) => heard.push(l));
    t.relay.last.receive({ type: "connections", connections: [{ id: "conn_x", client: 7 }, "junk"] });
    t.relay.last.receive({ type: "connections" }); // no list: ignored, not an empty one
    assert.deepEqual(heard, [
      [{ id: "conn_x", client: "", host: "", createdAt: 0, lastUsedAt: 0, scope: [] }],
    ], "an item that is no connection is left out");
    assert.equal(t.client.status.state, "connected");
    assert.ok(t.browser.warnings.some((w) => /listener threw/.test(w)));
  });

  test("a connections answering an unknown ref is still ignored with a warning, not taken as a push", () => {
    const t = connected();
    const heard: unknown[] = [];
    t.client.onConnections((l) => heard.push(l));
    t.relay.last.sent("list-connections"); // none: no welcome since subscribing
    t.relay.last.receive({ type: "connections", ref: "r99-old", connections: [A] });
    assert.deepEqual(heard, []);
    assert.equal(t.client.connections, undefined);
    assert.equal(t.browser.warnings.length, 1);
  });
});

describe("a connection in words", () => {
  test("the scope is said with the tools' titles, and what the app lacks is named", () => {
    assert.equal(scopeWords([{ tool: "echo" }, { tool: "counter", actions: ["get", "increment"] }], app), "echo; counter: get, increment");
    const titled = { tools: app.tools.map((t) => ({ ...t, title: t.name[0]!.toUpperCase() + t.name.slice(1) })) };
    assert.equal(scopeWords([{ tool: "counter", actions: ["*"] }, { tool: "gone" }], titled), "Counter: everything; gone (not in this version of the app)");
    assert.equal(scopeWords([{ tool: "counter" }], titled), "Counter: everything");
    assert.equal(scopeWords([], app), "Nothing: it can use no tool.");
  });

  test("who, host, when, and a last use this relay does not record yet", () => {
    const w = connectionWords(A, app, (ms) => `t${ms - T0}`);
    assert.deepEqual(w, {
      name: "Claude", host: "claude.test", who: "Claude (claude.test)", shortId: "a", created: "t0",
      lastUsed: "not yet recorded (the relay records use about hourly)", scope: "echo; counter: get",
    });
    const used = connectionWords({ ...A, lastUsedAt: T0 + 5000, client: "", host: "" }, app, (ms) => `t${ms - T0}`);
    assert.equal(used.lastUsed, "t5000");
    assert.equal(used.who, "An application without a name (an unknown host)");
  });
});

/** StubClient is a ConnectionsClient whose answers the test decides. */
class StubClient implements ConnectionsClient {
  connections: ConnectionInfo[] | undefined;
  listeners = new Set<(l: readonly ConnectionInfo[]) => void>();
  calls: unknown[][] = [];
  next: { forget?: Error; setScope?: Error; list?: Error } = {};
  onConnections(l: (list: readonly ConnectionInfo[]) => void) {
    this.listeners.add(l);
    if (this.connections) l(this.connections); // as a TabClient does
    return () => this.listeners.delete(l);
  }
  push(list: ConnectionInfo[]) {
    this.connections = list;
    for (const l of this.listeners) l(list);
  }
  async listConnections() {
    this.calls.push(["list"]);
    if (this.next.list) throw this.next.list;
    return this.connections ?? [];
  }
  async forget(id: string) {
    this.calls.push(["forget", id]);
    if (this.next.forget) throw this.next.forget;
  }
  async setScope(id: string, scope: readonly ScopeEntry[]) {
    this.calls.push(["setScope", id, scope]);
    if (this.next.setScope) throw this.next.setScope;
    const c = this.connections?.find((x) => x.id === id);
    return { ...c!, scope: [...scope] };
  }
}

describe("several connections of one client, and a host's sub-agents", () => {
  const twin = (id: string, createdAt: number, parentId?: string): ConnectionInfo =>
    ({ ...conn(id, "Claude", createdAt), ...(parentId ? { parentId } : {}) });

  test("the short id tells apart connections of one name and host, and the time is to the second", () => {
    assert.equal(shortId("conn_Zx9kQ2mLp0"), "Zx9kQ2");
    const c = new StubClient();
    c.push([twin("conn_first1", T0), twin("conn_second", T0 + 1000), B]);
    const panel = new ConnectionsPanel(c, app, (ms) => `t${ms - T0}`);
    panel.open();
    assert.deepEqual(panel.rows.map((r) => [r.who, r.shortId, r.created]), [
      ["Other (other.test)", "b", "t1000"],
      ["Claude (claude.test, id second)", "second", "t1000"],
      ["Claude (claude.test, id first1)", "first1", "t0"],
    ]);
    panel.askForget("conn_first1");
    assert.equal(panel.rows.find((r) => r.id === "conn_first1")!.mode, "forget");
    const seconds = connectionWords(A, app).created;
    assert.match(seconds, /\d{1,2}:\d{2}:\d{2}/, "created says the second");
  });

  test("the client keeps a derived connection's parentId from the relay's list, and gives none to one without", () => {
    const t = connected();
    t.relay.last.receive({ type: "connections", connections: [{ ...B, parentId: "conn_a" }, A, { ...A, id: "conn_c", parentId: 7 }] });
    assert.deepEqual(t.client.connections?.map((c) => c.parentId), ["conn_a", undefined, undefined]);
  });

  test("derived connections come under their parent, deepest last; one whose parent is not listed stands alone", async () => {
    const c = new StubClient();
    const root = twin("conn_root00", T0), kid = twin("conn_kid000", T0 + 3000, "conn_root00");
    const grand = twin("conn_grand0", T0 + 4000, "conn_kid000"), stray = twin("conn_stray0", T0 + 5000, "conn_gone00");
    c.push([grand, stray, B, kid, root]);
    const panel = new ConnectionsPanel(c, app);
    panel.open();
    assert.deepEqual(panel.rows.map((r) => [r.id, r.depth, r.parentId ?? ""]), [
      ["conn_stray0", 0, ""], ["conn_b", 0, ""], ["conn_root00", 0, ""],
      ["conn_kid000", 1, "conn_root00"], ["conn_grand0", 2, "conn_kid000"],
    ]);
    assert.equal(panel.rows.find((r) => r.id === "conn_kid000")!.derivedFrom, "Claude (claude.test, id root00)");
    assert.equal(panel.rows.find((r) => r.id === "conn_root00")!.derivedFrom, "");
    // Forgetting the parent takes its sub-agents' connections with it at once.
    panel.askForget("conn_root00");
    assert.equal(await panel.forget("conn_root00"), true);
    assert.deepEqual(panel.rows.map((r) => r.id), ["conn_stray0", "conn_b"]);
    assert.equal(panel.notice, "Claude (claude.test, id root00) is forgotten: it can no longer use Test. To use Test again, it must connect anew.");
  });
});

describe("the Connections panel, headless", () => {
  test("it follows a real client: asks once on open, then every push replaces the list, newest first", async () => {
    const t = connected();
    const panel = new ConnectionsPanel(t.client, app);
    let changes = 0;
    panel.onChange(() => changes++);
    panel.open();
    assert.equal(panel.list, undefined, "loading");
    answerList(t.relay.last, [A]);
    await flush();
    assert.deepEqual(panel.rows.map((r) => r.id), ["conn_a"]);
    t.relay.last.receive({ type: "connections", connections: [A, B] });
    assert.deepEqual(panel.rows.map((r) => [r.id, r.mode]), [["conn_b", "view"], ["conn_a", "view"]]);
    assert.ok(changes >= 2);
    assert.equal(panel.stale, false);
    t.relay.last.end(1006);
    assert.equal(panel.stale, true, "not connected: the list may be out of date");
    await t.browser.clock.advance(1000);
    t.relay.last.welcome();
    assert.equal(t.relay.last.sent("list-connections").length, 1, "asked again after the reconnect");
    panel.close();
    t.relay.last.receive({ type: "connections", connections: [] });
    assert.equal(panel.rows.length, 2, "a closed panel follows no more");
  });

  test("changing a scope starts from the connection's own and saves the person's choice", async () => {
    const c = new StubClient();
    c.push([A, B]);
    const panel = new ConnectionsPanel(c, app);
    panel.open();
    await flush();
    panel.edit("conn_a");
    const row = panel.rows.find((r) => r.id === "conn_a")!;
    assert.equal(row.mode, "edit");
    assert.ok(row.picker);
    assert.deepEqual(row.picker.scope(), [{ tool: "echo" }, { tool: "counter", actions: ["get"] }], "ticked as it is now");
    row.picker.set("echo", undefined, false);
    row.picker.set("counter", "increment", true);
    assert.equal(await panel.save("conn_a"), true);
    assert.deepEqual(c.calls.at(-1), ["setScope", "conn_a", [{ tool: "counter", actions: ["get", "increment"] }]]);
    const after = panel.rows.find((r) => r.id === "conn_a")!;
    assert.equal(after.mode, "view");
    assert.equal(after.scope, "counter: get, increment");
    assert.equal(panel.notice, "Saved: Claude (claude.test) may use counter: get, increment.");
    // Nothing ticked is allowed: connected, with no access.
    panel.edit("conn_b");
    panel.rows.find((r) => r.id === "conn_b")!.picker!.set("counter", undefined, false);
    assert.equal(await panel.save("conn_b"), true);
    assert.deepEqual(c.calls.at(-1), ["setScope", "conn_b", []]);
    assert.equal(panel.notice, "Saved: Other (other.test) may use no tool.");
  });

  test("without the app's declaration there is no picker: saving could only take tools away", () => {
    const c = new StubClient();
    c.push([A]);
    const panel = new ConnectionsPanel(c);
    panel.open();
    panel.edit("conn_a");
    assert.equal(panel.rows[0]!.mode, "view");
  });

  test("forget needs a second word, and cancel goes back", async () => {
    const c = new StubClient();
    c.push([A, B]);
    const panel = new ConnectionsPanel(c, app);
    panel.open();
    assert.equal(await panel.forget("conn_a"), false, "not asked: nothing forgotten");
    assert.equal(c.calls.filter((x) => x[0] === "forget").length, 0);
    panel.askForget("conn_a");
    assert.equal(panel.rows.find((r) => r.id === "conn_a")!.mode, "forget");
    panel.cancel("conn_a");
    assert.equal(panel.rows.find((r) => r.id === "conn_a")!.mode, "view");
    panel.askForget("conn_a");
    assert.equal(await panel.forget("conn_a"), true);
    assert.deepEqual(c.calls.at(-1), ["forget", "conn_a"]);
    assert.deepEqual(panel.rows.map((r) => r.id), ["conn_b"], "gone at once, before the push");
    assert.match(panel.notice, /^Claude \(claude\.test\) is forgotten/);
  });

  test("every relay error is said in words, naming the connection", async () => {
    const c = new StubClient();
    c.push([A, B]);
    const panel = new ConnectionsPanel(c, app);
    panel.open();
    await flush();
    panel.askForget("conn_a");
    c.next.forget = new RelayError("unavailable", "store down");
    assert.equal(await panel.forget("conn_a"), false);
    assert.equal(panel.alert, `Could not forget Claude (claude.test). ${en.errors.unavailable}`);
    assert.equal(panel.rows.find((r) => r.id === "conn_a")!.mode, "forget", "the question stays: try again or keep it");
    c.next.forget = new RelayError("not-found", "gone");
    const lists = c.calls.filter((x) => x[0] === "list").length;
    await panel.forget("conn_a");
    assert.equal(panel.alert, `Could not forget Claude (claude.test). ${en.errors["not-found"]}`);
    assert.equal(c.calls.filter((x) => x[0] === "list").length, lists + 1, "not found: the list is asked anew");
    panel.edit("conn_b");
    c.next.setScope = new RelayError("invalid-scope", "unknown tool");
    assert.equal(await panel.save("conn_b"), false);
    assert.equal(panel.alert, `Could not change what Other (other.test) may use. ${en.connections.scopeRefused}`);
    c.next.setScope = new RelayError("lost", "The connection to the relay ended before it answered, so this may or may not have been done.");
    await panel.save("conn_b");
    assert.match(panel.alert, /may or may not have been done/);
    c.next.list = new RelayError("not-connected", "The relay could not be reached in time, so the request was not sent.");
    await panel.refresh();
    assert.match(panel.alert, /^The list of connections could not be loaded\. The relay could not be reached/);
  });

  test("a row being edited or asked about that another tab forgot says so and goes", async () => {
    const c = new StubClient();
    c.push([A, B]);
    const panel = new ConnectionsPanel(c, app);
    panel.open();
    await flush();
    panel.edit("conn_a");
    panel.askForget("conn_b");
    c.push([B]);
    assert.deepEqual(panel.rows.map((r) => [r.id, r.mode]), [["conn_b", "forget"]]);
    assert.equal(panel.notice, "Claude (claude.test) is no longer connected.");
  });

  test("a request under way marks its row busy and is not sent twice", async () => {
    const c = new StubClient();
    c.push([A]);
    const panel = new ConnectionsPanel(c, app);
    panel.open();
    panel.askForget("conn_a");
    const first = panel.forget("conn_a");
    assert.equal(panel.rows[0]!.busy, true);
    assert.equal(await panel.forget("conn_a"), false);
    assert.equal(await first, true);
    assert.equal(c.calls.filter((x) => x[0] === "forget").length, 1);
  });
});
