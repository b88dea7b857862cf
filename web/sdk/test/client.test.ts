import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Status } from "../src/client.js";
import { STOP_MESSAGES } from "../src/codes.js";
import { app, TestHandlers } from "./app.js";
import { FakeBrowser, MemoryStorage } from "./fakes.js";

function newTab(browser = new FakeBrowser(), extra = {}) {
  const h = new TestHandlers();
  const tab = browser.tab({ app, handlers: h.handlers }, extra);
  const statuses: Status[] = [];
  tab.client.onStatus((s) => statuses.push(s));
  return { browser, clock: browser.clock, h, statuses, ...tab };
}

describe("connecting", () => {
  test("the hello proves the tab with the stored secret, and the welcome connects", () => {
    const t = newTab();
    t.page.focused = true;
    t.client.start();
    assert.equal(t.relay.last.url, "wss://relay.test/tab");
    t.relay.last.open();
    const [hello] = t.relay.last.sent();
    const secret = t.browser.local.getItem("tabrelay:secret");
    assert.match(secret ?? "", /^[A-Za-z0-9_-]{43}$/);
    assert.deepEqual(hello, {
      type: "hello", protocol: 1, secret, tabId: t.client.tabId, bundle: "test-1", focusedAt: t.clock.t,
    });
    assert.equal(t.client.status.state, "connecting");
    t.relay.last.welcome();
    assert.deepEqual(t.client.status, { state: "connected", pairing: "ptest" });
    assert.deepEqual(t.statuses.map((s) => s.state), ["idle", "connecting", "connected"]);
  });

  test("every tab of the browser sends the same secret; each page load has its own tab id", () => {
    const browser = new FakeBrowser();
    const a = newTab(browser);
    const b = newTab(browser);
    a.client.start();
    b.client.start();
    a.relay.last.open();
    b.relay.last.open();
    assert.equal(a.relay.last.sent()[0]!["secret"], b.relay.last.sent()[0]!["secret"]);
    assert.notEqual(a.client.tabId, b.client.tabId);
  });

  test("the tab id lives in memory only: a duplicated tab (sessionStorage copied) gets its own", () => {
    const browser = new FakeBrowser();
    const session = new MemoryStorage();
    const first = newTab(browser, { sessionStorage: session } as object);
    first.client.start();
    const copy = newTab(browser, { sessionStorage: session } as object);
    copy.client.start();
    assert.notEqual(copy.client.tabId, first.client.tabId);
    assert.equal(session.length, 0);
  });

  test("a browser with no usable storage gets a stopped status with a sentence, not a crash", () => {
    const t = newTab(new FakeBrowser(), { localStorage: null });
    t.client.start();
    assert.deepEqual(t.client.status, { state: "stopped", why: "no-storage", message: STOP_MESSAGES["no-storage"] });
    assert.equal(t.relay.sockets.length, 0);
  });

  test("a storage that takes a probe but refuses the secret is no storage either", () => {
    const t = newTab(new FakeBrowser(), { localStorage: new MemoryStorage(20) });
    t.client.start();
    assert.equal(t.client.status.state === "stopped" && t.client.status.why, "no-storage");
  });

  test("a garbled welcome is bounded: the watchdog waits at most 15 min, the message limit is at least 64 KiB", () => {
    const t = newTab();
    t.client.start();
    t.relay.last.open();
    t.relay.last.receive({ type: "welcome", protocol: 1, pairing: "p", pingIntervalMs: 1e12, maxMessageBytes: 10 });
    assert.ok(Math.max(...t.clock.pending()) <= 900_000, String(t.clock.pending()));
    t.relay.last.receive({ type: "call", id: "c1", tool: "counter", arguments: { action: "increment", by: 1 }, deadline: t.clock.t + 60_000 });
    return new Promise<void>((resolve) => setImmediate(() => {
      assert.equal(t.relay.last.sent("result").length, 1, "a small result is not over the limit");
      resolve();
    }));
  });

  test("ping is answered with pong", () => {
    const t = newTab();
    t.client.start();
    t.relay.last.welcome();
    t.relay.last.receive({ type: "ping", at: 1 });
    assert.deepEqual(t.relay.last.sent("pong"), [{ type: "pong" }]);
  });

  test("silence for three ping intervals: the socket is dead, and the tab reconnects", async () => {
    const t = newTab();
    t.client.start();
    t.relay.last.welcome(1000);
    await t.clock.advance(2000);
    t.relay.last.receive({ type: "ping" }); // heard at 2 s: the limit runs from here
    await t.clock.advance(2999);
    assert.equal(t.relay.sockets.length, 1);
    assert.equal(t.client.status.state, "connected");
    await t.clock.advance(1);
    assert.equal(t.client.status.state, "reconnecting");
    assert.equal(t.relay.sockets[0]!.closedByTab, 1000);
    await t.clock.advance(20_000);
    assert.equal(t.relay.sockets.length, 2);
  });

  test("no welcome within 20 s: the try failed", async () => {
    const t = newTab();
    t.client.start();
    t.relay.last.open();
    await t.clock.advance(20_000);
    assert.equal(t.client.status.state, "reconnecting");
  });

  test("focus events send focus with the time, and the next hello carries it", async () => {
    const t = newTab();
    t.client.start();
    t.relay.last.welcome();
    await t.clock.advance(5000);
    t.page.focus();
    assert.deepEqual(t.relay.last.sent("focus"), [{ type: "focus", at: t.clock.t }]);
    const at = t.clock.t;
    t.relay.last.end(1006);
    await t.clock.advance(1000);
    t.relay.last.open();
    assert.equal(t.relay.last.sent("hello")[0]!["focusedAt"], at);
    assert.equal(t.relay.last.sent("hello")[0]!["reconnects"], 1);
  });

  test("stop() closes the socket and stays stopped; start() connects again", async () => {
    const t = newTab();
    t.client.start();
    t.relay.last.welcome();
    t.client.stop();
    assert.equal(t.client.status.state, "stopped");
    assert.equal(t.relay.last.closedByTab, 1000);
    await t.clock.advance(60_000);
    assert.equal(t.relay.sockets.length, 1);
    t.client.start();
    assert.equal(t.relay.sockets.length, 2);
  });
});

describe("close codes (tab-protocol §16)", () => {
  const stops: [number, string][] = [[4100, "bad-secret"], [4101, "unsupported-protocol"], [4102, "forgotten"], [4103, "bad-message"], [1009, "too-big"], [4150, "refused"]];
  for (const [code, why] of stops) {
    test(`${code} stops with the reason "${why}" and a sentence, and never reconnects`, async () => {
      const t = newTab();
      t.client.start();
      t.relay.last.welcome();
      t.relay.last.end(code, "x");
      assert.equal(t.client.status.state, "stopped");
      assert.deepEqual(t.client.status, { state: "stopped", why, message: STOP_MESSAGES[why as keyof typeof STOP_MESSAGES], code });
      await t.clock.advance(120_000);
      assert.equal(t.relay.sockets.length, 1);
    });
  }

  test("4102 forgotten deletes the secret: the next start is a new browser", () => {
    const t = newTab();
    t.client.start();
    const old = t.browser.local.getItem("tabrelay:secret");
    t.relay.last.welcome();
    t.relay.last.end(4102);
    assert.equal(t.browser.local.getItem("tabrelay:secret"), null);
    t.client.start();
    t.relay.last.open();
    assert.notEqual(t.relay.last.sent()[0]!["secret"], old);
  });

  test("4102 in a tab whose secret another tab has made anew leaves the new one", () => {
    const browser = new FakeBrowser();
    const a = newTab(browser);
    const b = newTab(browser);
    a.client.start();
    b.client.start();
    a.relay.last.welcome();
    b.relay.last.welcome();
    a.relay.last.end(4102);
    a.client.start(); // the browser's new secret
    const fresh = browser.local.getItem("tabrelay:secret");
    assert.ok(fresh);
    b.relay.last.end(4102);
    assert.equal(browser.local.getItem("tabrelay:secret"), fresh);
  });

  test("each hello sends the stored secret: a tab whose secret another tab replaced sends the new one", async () => {
    const t = newTab();
    t.client.start();
    t.relay.last.welcome();
    const other = "B".repeat(43);
    t.browser.local.setItem("tabrelay:secret", other);
    t.relay.last.end(1006);
    await t.clock.advance(1000);
    t.relay.last.open();
    assert.equal(t.relay.last.sent("hello")[0]!["secret"], other);
  });

  test("a new browser refused with a wait comes back after it, plus the jitter (issue 23)", async () => {
    const t = newTab();
    t.client.start();
    t.relay.last.open();
    t.relay.last.end(4007, "too many new browsers from this address; retry in 90 s");
    // Refused before a welcome: n = 1, jitter in [0, 1 s); random 0.5 → 500 ms on top of the 90 s.
    assert.deepEqual(t.client.status, { state: "reconnecting", retryAt: t.clock.t + 90_500, seconds: 91, code: 4007 });
    await t.clock.advance(90_499);
    assert.equal(t.relay.sockets.length, 1);
    await t.clock.advance(1);
    assert.equal(t.relay.sockets.length, 2);
  });

  for (const code of [4000, 4001, 4002, 4003, 4004, 4005, 4006, 4007, 1000, 1001, 1006, 1011]) {
    test(`${code} reconnects with the back-off, on a new socket`, async () => {
      const t = newTab();
      t.client.start();
      t.relay.last.welcome();
      t.relay.last.end(code);
      // Welcomed and dropped at once: one early end, n = 1, a wait in [0, 1 s); random 0.5 → 500 ms.
      assert.deepEqual(t.client.status, { state: "reconnecting", retryAt: t.clock.t + 500, seconds: 1, code });
      await t.clock.advance(499);
      assert.equal(t.relay.sockets.length, 1);
      await t.clock.advance(1);
      assert.equal(t.relay.sockets.length, 2);
      assert.notEqual(t.relay.sockets[1], t.relay.sockets[0]);
    });
  }

  test("4008 on this page's socket: another page load has its tab id, so it makes a new one", async () => {
    const t = newTab();
    t.client.start();
    const before = t.client.tabId;
    t.relay.last.welcome();
    t.relay.last.end(4008);
    await t.clock.advance(1000);
    t.relay.last.open();
    assert.notEqual(t.client.tabId, before);
    assert.equal(t.relay.last.sent("hello")[0]!["tabId"], t.client.tabId);
  });

  test("a socket this page gave up is not heard again: its late 4008 changes nothing", async () => {
    const t = newTab();
    t.client.start();
    t.relay.last.welcome(1000);
    const old = t.relay.last;
    await t.clock.advance(3000); // silent: given up
    await t.clock.advance(20_000);
    t.relay.last.welcome();
    const id = t.client.tabId;
    old.end(4008);
    assert.equal(t.client.tabId, id);
    assert.equal(t.client.status.state, "connected");
  });
});

describe("reconnects (tab-protocol §15)", () => {
  test("waits grow while dials fail, and start from the bottom after a socket that lived 10 s", async () => {
    const t = newTab(new FakeBrowser(), { random: () => 0.999 });
    t.client.start();
    const waits: number[] = [];
    for (let i = 0; i < 7; i++) {
      t.relay.last.end(1006); // the dial failed: no welcome
      waits.push(t.clock.pending()[0]!);
      await t.clock.advance(waits[i]!);
    }
    assert.deepEqual(waits, [999, 1998, 3996, 7992, 15984, 19980, 19980]);
    t.relay.last.welcome();
    await t.clock.advance(10_000);
    t.relay.last.end(1006);
    assert.equal(t.clock.pending()[0], 499);
  });

  test("a drain closes the socket at once and reconnects after reconnectAfterMs, with the back-off reset", async () => {
    const t = newTab();
    t.client.start();
    t.relay.last.end(1006);
    await t.clock.advance(1000);
    t.relay.last.end(1006);
    await t.clock.advance(2000);
    t.relay.last.welcome();
    t.relay.last.receive({ type: "drain", reconnectAfterMs: 4210 });
    assert.equal(t.relay.last.closedByTab, 1000);
    assert.deepEqual(t.client.status, { state: "reconnecting", retryAt: t.clock.t + 4210, seconds: 5, code: 4000 });
    await t.clock.advance(4209);
    assert.equal(t.relay.sockets.length, 3);
    await t.clock.advance(1);
    assert.equal(t.relay.sockets.length, 4);
    t.relay.last.end(1006); // a failed dial after the drain: n = 1
    assert.equal(t.clock.pending()[0], 500);
  });

  test("the network coming back ends the wait, and keeps the count of failed tries", async () => {
    const t = newTab();
    t.client.start();
    t.relay.last.end(1006);
    await t.clock.advance(t.clock.pending()[0]!);
    t.relay.last.end(1006); // n = 2: a wait up to 2 s
    t.page.goOnline();
    assert.equal(t.relay.sockets.length, 3);
    assert.equal(t.client.status.state, "connecting");
    t.page.goOnline(); // not waiting: nothing
    assert.equal(t.relay.sockets.length, 3);
    t.relay.last.end(1006);
    assert.equal(t.clock.pending()[0], 2000, "n = 3: the ceiling is 4 s, random 0.5");
  });

  test("a 4000 close without a drain uses the back-off", () => {
    const t = newTab();
    t.client.start();
    t.relay.last.welcome();
    t.relay.last.end(4000);
    assert.equal(t.clock.pending()[0], 500);
  });

  test("a garbled drain delay is bounded to 60 s", () => {
    const t = newTab();
    t.client.start();
    t.relay.last.welcome();
    t.relay.last.receive({ type: "drain", reconnectAfterMs: 1e12 });
    assert.equal(t.clock.pending()[0], 60_000);
  });
});
