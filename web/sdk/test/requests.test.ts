import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { RelayError, REQUEST_MESSAGES, takeConnectCode } from "../src/requests.js";
import { STOP_MESSAGES } from "../src/codes.js";
import { app, TestHandlers } from "./app.js";
import { FakeBrowser, flush } from "./fakes.js";

function connected() {
  const browser = new FakeBrowser();
  const t = browser.tab({ app, handlers: new TestHandlers().handlers });
  t.client.start();
  t.relay.last.welcome();
  return { browser, clock: browser.clock, ...t };
}

/** settled reports how a promise ended, without letting a rejection go unhandled. */
function settle<T>(p: Promise<T>) {
  const out: { value?: T; error?: RelayError; done: boolean } = { done: false };
  p.then((v) => Object.assign(out, { value: v, done: true }), (e: RelayError) => Object.assign(out, { error: e, done: true }));
  return out;
}

const CONN = { id: "conn_1", client: "Claude", host: "claude.ai", createdAt: 5, lastUsedAt: 5, scope: [{ tool: "echo", actions: ["*"] }] };

describe("requests with ref", () => {
  test("connect-info is sent with a fresh ref and resolves with who asks", async () => {
    const t = connected();
    const a = settle(t.client.connectInfo("kq7m 2xdp"));
    const b = settle(t.client.connectInfo("KQ7M-2XDP"));
    const [ra, rb] = t.relay.last.sent("connect-info");
    assert.equal(ra!["code"], "kq7m 2xdp");
    assert.notEqual(ra!["ref"], rb!["ref"]);
    // Answers may come in either order: matched by ref only.
    t.relay.last.receive({ type: "connect-info", ref: rb!["ref"], client: "Other", clientKind: "registered", redirectHost: "x.test", requestedScope: null, expiresAt: 9 });
    t.relay.last.receive({
      type: "connect-info", ref: ra!["ref"], client: "Claude", clientKind: "metadata-document", clientUrl: "https://claude.ai/meta.json",
      redirectHost: "xn--clude-5ve.ai", redirectHostMixedScript: true, requestedScope: [{ tool: "counter", actions: ["get"] }], expiresAt: 1_767_226_200_000,
      startedAt: 1_767_225_600_000, device: "Chrome on Linux", sameAddress: true, crossDevice: false, state: "pending",
    });
    await flush();
    assert.deepEqual(a.value, {
      client: "Claude", clientKind: "metadata-document", clientUrl: "https://claude.ai/meta.json", redirectHost: "xn--clude-5ve.ai",
      redirectHostMixedScript: true, requestedScope: [{ tool: "counter", actions: ["get"] }], expiresAt: 1_767_226_200_000,
      startedAt: 1_767_225_600_000, device: "Chrome on Linux", sameAddress: true, crossDevice: false, state: "pending", reason: "",
    });
    // An older relay's answer: typed codes are all it has.
    assert.equal(b.value?.crossDevice, true);
    assert.equal(b.value?.state, "pending");
    assert.equal(b.value?.client, "Other");
    assert.equal(b.value?.requestedScope, null);
  });

  test("approveLink says the code came with the link and resolves with the relay's confirm page", async () => {
    const t = connected();
    const ws = t.relay.last;
    const link = settle(t.client.approveLink("KQ7M-2XDP", [{ tool: "echo" }]));
    const old = settle(t.client.approveLink("KQ7M-2XDP", [{ tool: "echo" }]));
    const [a, b] = ws.sent("approve");
    assert.equal(a!["via"], "link");
    ws.receive({ type: "done", ref: a!["ref"], confirm: "https://relay.example/authorize/status/req_1/confirm#h" });
    ws.receive({ type: "done", ref: b!["ref"], connection: CONN }); // an older relay
    await flush();
    assert.equal(link.value, "https://relay.example/authorize/status/req_1/confirm#h");
    assert.equal(old.value, "", "an older relay's answer has no confirm page");
  });

  test("approve, decline, list-connections, forget and set-scope send their fields and resolve with the answer", async () => {
    const t = connected();
    const ws = t.relay.last;
    const approve = settle(t.client.approve("KQ7M-2XDP", [{ tool: "echo" }, { tool: "counter", actions: ["get"] }]));
    const decline = settle(t.client.decline("AAAA-BBBB"));
    const list = settle(t.client.listConnections());
    const forget = settle(t.client.forget(CONN));
    const scope = settle(t.client.setScope("conn_1", []));
    const sent = ws.sent().slice(1);
    assert.deepEqual(sent.map((m) => m["type"]), ["approve", "decline", "list-connections", "forget", "set-scope"]);
    assert.deepEqual(sent[0]!["scope"], [{ tool: "echo" }, { tool: "counter", actions: ["get"] }]);
    assert.equal(sent[0]!["via"], "typed");
    assert.equal(sent[1]!["code"], "AAAA-BBBB");
    assert.equal(sent[3]!["connection"], "conn_1");
    assert.deepEqual(sent[4]!["scope"], []);
    ws.receive({ type: "done", ref: sent[0]!["ref"], connection: CONN });
    ws.receive({ type: "done", ref: sent[1]!["ref"] });
    ws.receive({ type: "connections", ref: sent[2]!["ref"], connections: [CONN] });
    ws.receive({ type: "done", ref: sent[3]!["ref"] });
    ws.receive({ type: "done", ref: sent[4]!["ref"], connection: { ...CONN, scope: [] } });
    await flush();
    assert.deepEqual(approve.value, CONN);
    assert.ok(decline.done && !decline.error);
    assert.deepEqual(list.value, [CONN]);
    assert.ok(forget.done && !forget.error);
    assert.deepEqual(scope.value?.scope, []);
  });

  test("an error answer rejects with the relay's code and sentence", async () => {
    const t = connected();
    const r = settle(t.client.approve("KQ7M-2XDB", [{ tool: "echo" }]));
    const ref = t.relay.last.sent("approve")[0]!["ref"];
    t.relay.last.receive({ type: "error", ref, code: "wrong-code", message: "No connection waits for this code." });
    await flush();
    assert.ok(r.error instanceof RelayError);
    assert.equal(r.error.code, "wrong-code");
    assert.equal(r.error.message, "No connection waits for this code.");
  });

  test("the relay's 10 s unavailable is passed on", async () => {
    const t = connected();
    const r = settle(t.client.listConnections());
    await t.clock.advance(10_000);
    const ref = t.relay.last.sent("list-connections")[0]!["ref"];
    t.relay.last.receive({ type: "error", ref, code: "unavailable", message: "The relay could not do it now." });
    await flush();
    assert.equal(r.error?.code, "unavailable");
  });

  test("a request made while disconnected waits for the next welcome", async () => {
    const browser = new FakeBrowser();
    const t = browser.tab({ app, handlers: new TestHandlers().handlers });
    t.client.start();
    const r = settle(t.client.connectInfo("KQ7M-2XDP"));
    t.relay.last.open();
    assert.equal(t.relay.last.sent("connect-info").length, 0, "nothing before the welcome");
    await browser.clock.advance(5_000);
    t.relay.last.welcome();
    const [req] = t.relay.last.sent("connect-info");
    assert.ok(req);
    t.relay.last.receive({ type: "connect-info", ref: req["ref"], client: "C", clientKind: "registered", redirectHost: "h", requestedScope: null, expiresAt: 1 });
    await flush();
    assert.equal(r.value?.client, "C");
  });

  test("one that gets no welcome in 15 s is rejected unsent, with a sentence", async () => {
    const browser = new FakeBrowser();
    const t = browser.tab({ app, handlers: new TestHandlers().handlers });
    t.client.start();
    const r = settle(t.client.listConnections());
    await browser.clock.advance(14_999);
    assert.equal(r.done, false);
    await browser.clock.advance(1);
    assert.equal(r.error?.code, "not-connected");
    assert.equal(r.error?.message, REQUEST_MESSAGES["not-connected"]);
    t.relay.last.welcome();
    assert.equal(t.relay.last.sent("list-connections").length, 0, "a rejected request is never sent later");
  });

  test("a socket that closes before the answer rejects: it may or may not have been done", async () => {
    const t = connected();
    const r = settle(t.client.approve("KQ7M-2XDP", [{ tool: "echo" }]));
    const ref = t.relay.last.sent("approve")[0]!["ref"];
    t.relay.last.end(1006);
    await flush();
    assert.equal(r.error?.code, "lost");
    assert.match(r.error?.message ?? "", /may or may not have been done/);
    // A late answer on a new socket to the old ref is ignored, not resolved twice.
    await t.clock.advance(1000);
    t.relay.last.welcome();
    t.relay.last.receive({ type: "done", ref, connection: CONN });
    assert.equal(t.relay.last.sent("approve").length, 0, "not sent again by itself");
  });

  test("a relay that never answers: rejected after 30 s", async () => {
    const t = connected();
    const r = settle(t.client.forget("conn_1"));
    await t.clock.advance(30_000);
    assert.equal(r.error?.code, "no-answer");
  });

  test("a stopped client rejects at once, and a stop rejects what waits", async () => {
    const t = connected();
    t.relay.last.end(1006);
    const waiting = settle(t.client.listConnections());
    t.client.stop();
    await flush();
    assert.equal(waiting.error?.code, "stopped");
    assert.equal(waiting.error?.message, STOP_MESSAGES.stopped);
    const after = settle(t.client.decline("KQ7M-2XDP"));
    await flush();
    assert.equal(after.error?.code, "stopped");
  });

  test("fields are checked before sending: a bad one would close the socket (4103)", async () => {
    const t = connected();
    const cases = [
      settle(t.client.connectInfo("  ")),
      settle(t.client.approve("KQ7M-2XDP", [])),
      settle(t.client.approve("KQ7M-2XDP", [{ tool: "echo", actions: [] }])),
      settle(t.client.setScope("conn_1", [{ tool: 3 } as never])),
      settle(t.client.forget("")),
      settle(t.client.decline(undefined as never)),
    ];
    await flush();
    assert.deepEqual(cases.map((c) => c.error?.code), ["wrong-code", "invalid-scope", "invalid-scope", "invalid-scope", "not-found", "wrong-code"]);
    assert.deepEqual(t.relay.last.sent().map((m) => m["type"]), ["hello"]);
  });

  test("an answer to no pending request, or an error without ref, is ignored with a warning", () => {
    const t = connected();
    t.relay.last.receive({ type: "done", ref: "nope" });
    t.relay.last.receive({ type: "error", code: "unsupported", message: "x" });
    assert.equal(t.client.status.state, "connected");
    assert.equal(t.browser.warnings.length, 2);
  });

  test("an answer of another type than its request's is not taken for it", async () => {
    const t = connected();
    const info = settle(t.client.connectInfo("KQ7M-2XDP"));
    const list = settle(t.client.listConnections());
    const [ask] = t.relay.last.sent("connect-info");
    const [listed] = t.relay.last.sent("list-connections");
    t.relay.last.receive({ type: "done", ref: ask!["ref"] });
    t.relay.last.receive({ type: "connect-info", ref: listed!["ref"], client: "Claude" });
    await flush();
    assert.equal(info.done || list.done, false, "neither took the other's answer");
    assert.ok(t.browser.warnings.some((w) => w.includes('"done" answering no pending request')));
    t.relay.last.receive({ type: "connections", ref: listed!["ref"], connections: [CONN] });
    t.relay.last.receive({ type: "connect-info", ref: ask!["ref"], client: "Claude" });
    await flush();
    assert.deepEqual(list.value, [CONN]);
    assert.equal(info.value?.client, "Claude");
  });
});

describe("the connect fragment", () => {
  function win(href: string) {
    const w = {
      location: { href, get hash() { return w.location.href.includes("#") ? w.location.href.slice(w.location.href.indexOf("#")) : ""; } },
      history: { state: { s: 1 } as unknown, replaced: [] as unknown[][], replaceState(data: unknown, _u: string, url?: string) {
        w.history.replaced.push([data, url]);
        if (url) w.location.href = url;
      } },
    };
    return w;
  }

  test("reads the code and removes it from the address, keeping the rest", () => {
    const w = win("https://app.test/notes?x=1#tabrelay-connect=KQ7M-2XDP");
    assert.equal(takeConnectCode(w), "KQ7M-2XDP");
    assert.deepEqual(w.history.replaced, [[{ s: 1 }, "https://app.test/notes?x=1"]]);
    const v = win("https://app.test/#view=2&tabrelay-connect=kq7m%202xdp&tab");
    assert.equal(takeConnectCode(v), "kq7m 2xdp");
    assert.equal(v.location.href, "https://app.test/#view=2&tab");
  });

  test("no code: nothing is read and the address stays", () => {
    for (const href of ["https://app.test/", "https://app.test/#section", "https://app.test/#a=1&b"]) {
      const w = win(href);
      assert.equal(takeConnectCode(w), null);
      assert.deepEqual(w.history.replaced, []);
    }
    const empty = win("https://app.test/#tabrelay-connect=");
    assert.equal(takeConnectCode(empty), null);
    assert.equal(empty.location.href, "https://app.test/", "an empty one is removed too");
  });
});
