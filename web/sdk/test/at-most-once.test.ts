// Each call id runs at most once across the browser's tabs (tab-protocol §10).

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { SENTENCES } from "../src/record.js";
import { refusal } from "../src/notes.js";
import { app, callMsg, TestHandlers } from "./app.js";
import { FakeBrowser, flush, MemoryStorage } from "./fakes.js";
import type { Environment } from "../src/env.js";

function twoTabs(extra: Partial<Environment> = {}, browser = new FakeBrowser()) {
  const make = () => {
    const h = new TestHandlers();
    const tab = browser.tab({ app, handlers: h.handlers, waitForOtherTabMs: 5000 }, extra);
    tab.client.start();
    tab.relay.last.welcome();
    return { h, ...tab, sock: () => tab.relay.last };
  };
  return { browser, a: make(), b: make() };
}

const resultOf = (sock: { sent(t: string): Record<string, unknown>[] }, id: string) =>
  sock.sent("result").filter((m) => m["id"] === id).map((m) => m["result"]);

describe("at most once", () => {
  test("redelivered to the same tab after a reconnect: answered from the record, not run again", async () => {
    const { browser, a } = twoTabs();
    a.sock().receive(callMsg("c1", "counter", { action: "increment", by: 2 }));
    await flush();
    a.sock().end(1006); // the result may never have reached the relay
    await browser.clock.advance(1000);
    a.sock().welcome();
    a.sock().receive(callMsg("c1", "counter", { action: "increment", by: 2 }, { redelivery: 1 }));
    await flush();
    assert.equal(a.h.counter, 2);
    assert.equal(a.h.runs.length, 1);
    assert.deepEqual(resultOf(a.sock(), "c1"), [{ data: { counter: 2 } }]);
  });

  test("redelivered while it still runs in this tab: nothing more, its result goes out once", async () => {
    const { a } = twoTabs();
    a.sock().receive(callMsg("c1", "slow"));
    await flush();
    a.h.runs[0]!.asking();
    a.sock().receive(callMsg("c1", "slow", undefined, { redelivery: 1 }));
    await flush();
    assert.equal(a.h.runs.length, 1);
    assert.equal(a.sock().sent("asking").length, 2, "the open question is said again: a redelivery made the relay forget it");
    a.h.finish("c1", 1);
    await flush();
    assert.deepEqual(resultOf(a.sock(), "c1"), [{ data: 1 }]);
  });

  test("moved to another tab while the first still runs it: the second waits and sends the first's result", async () => {
    const { browser, a, b } = twoTabs();
    a.sock().receive(callMsg("c1", "slow"));
    await flush();
    b.sock().receive(callMsg("c1", "slow", undefined, { redelivery: 1 }));
    await browser.clock.advance(1000);
    a.h.finish("c1", { from: "a" });
    await browser.clock.advance(200);
    assert.equal(a.h.runs.length + b.h.runs.length, 1);
    assert.deepEqual(resultOf(b.sock(), "c1"), [{ data: { from: "a" } }]);
  });

  test("the other tab does not finish in time: an error result says it runs there", async () => {
    const { browser, a, b } = twoTabs();
    a.sock().receive(callMsg("c1", "slow"));
    await flush();
    b.sock().receive(callMsg("c1", "slow", undefined, { redelivery: 1 }));
    await browser.clock.advance(5100);
    assert.deepEqual(resultOf(b.sock(), "c1"), [refusal(SENTENCES.elsewhere)]);
    assert.equal(b.h.runs.length, 0);
    // That answer was for now: once a has finished, a redelivery to b gets the result.
    a.h.finish("c1", { from: "a" });
    await flush();
    b.sock().receive(callMsg("c1", "slow", undefined, { redelivery: 2 }));
    await browser.clock.advance(200);
    assert.deepEqual(resultOf(b.sock(), "c1"), [refusal(SENTENCES.elsewhere), { data: { from: "a" } }]);
    assert.equal(b.h.runs.length, 0);
  });

  test("the tab that ran it closed mid-call: the next tab does not run it again, and says so", async () => {
    const { browser, a, b } = twoTabs();
    a.sock().receive(callMsg("c1", "slow"));
    await flush();
    browser.locks.closeTab(a.name); // the page closed: the browser releases its locks
    b.sock().receive(callMsg("c1", "slow", undefined, { redelivery: 1 }));
    await flush();
    assert.equal(b.h.runs.length, 0);
    assert.deepEqual(resultOf(b.sock(), "c1"), [refusal(SENTENCES.halfway)]);
  });

  test("the tab that ran it closes while another waits for it: the lock, asked again, says so at once (issue 25)", async () => {
    for (const closeAfter of [0, 100, 1000, 3500, 4900]) {
      const { browser, a, b } = twoTabs();
      a.sock().receive(callMsg("c1", "slow"));
      await flush();
      b.sock().receive(callMsg("c1", "slow", undefined, { redelivery: 1 }));
      await browser.clock.advance(closeAfter);
      assert.deepEqual(resultOf(b.sock(), "c1"), [], `nothing yet, ${closeAfter} ms in`);
      browser.locks.closeTab(a.name); // the page closed: the browser releases its locks
      await browser.clock.advance(100);
      assert.deepEqual(resultOf(b.sock(), "c1"), [refusal(SENTENCES.halfway)], `closed ${closeAfter} ms in`);
      assert.equal(b.h.runs.length, 0, "not run again");
    }
  });

  test("the tab that held the lock finished and let it go: the waiting tab sends its result", async () => {
    const { browser, a, b } = twoTabs();
    a.sock().receive(callMsg("c1", "slow"));
    await flush();
    b.sock().receive(callMsg("c1", "slow", undefined, { redelivery: 1 }));
    await browser.clock.advance(300);
    a.h.finish("c1", { from: "a" });
    await browser.clock.advance(100);
    assert.deepEqual(resultOf(b.sock(), "c1"), [{ data: { from: "a" } }]);
    assert.equal(a.h.runs.length + b.h.runs.length, 1);
  });

  test("finished in one tab, redelivered to another: answered from the shared record", async () => {
    const { a, b } = twoTabs();
    a.sock().receive(callMsg("c1", "counter", { action: "increment" }));
    await flush();
    b.sock().receive(callMsg("c1", "counter", { action: "increment" }, { redelivery: 1 }));
    await flush();
    assert.equal(a.h.counter + b.h.counter, 1);
    assert.deepEqual(resultOf(b.sock(), "c1"), [{ data: { counter: 1 } }]);
  });

  test("a first delivery with redelivery 0 is still looked up, and redelivery > 0 with no record runs", async () => {
    const { a, b } = twoTabs();
    a.sock().receive(callMsg("c1", "echo", { n: 1 }));
    await flush();
    b.sock().receive(callMsg("c1", "echo", { n: 1 }));
    b.sock().receive(callMsg("c2", "echo", { n: 2 }, { redelivery: 3 }));
    await flush();
    assert.equal(b.h.runs.length, 1);
    assert.equal(b.h.runs[0]!.id, "c2");
  });

  test("without the Web Locks API the stored record alone keeps it to once", async () => {
    const { browser, a, b } = twoTabs({ locks: null });
    a.sock().receive(callMsg("c1", "slow"));
    await flush();
    b.sock().receive(callMsg("c1", "slow", undefined, { redelivery: 1 }));
    a.h.finish("c1", "a");
    await browser.clock.advance(200);
    assert.equal(b.h.runs.length, 0);
    assert.deepEqual(resultOf(b.sock(), "c1"), [{ data: "a" }]);
  });

  test("a result too big to store is recorded as done without it: another tab never runs the call", async () => {
    const browser = new FakeBrowser();
    const small = new MemoryStorage(2000);
    const { a, b } = twoTabs({ localStorage: small }, browser);
    a.sock().receive(callMsg("c1", "slow"));
    await flush();
    a.h.finish("c1", "x".repeat(5000));
    await flush();
    assert.deepEqual(resultOf(a.sock(), "c1"), [{ data: "x".repeat(5000) }]);
    b.sock().receive(callMsg("c1", "slow", undefined, { redelivery: 1 }));
    await flush();
    assert.equal(b.h.runs.length, 0);
    assert.deepEqual(resultOf(b.sock(), "c1"), [refusal(SENTENCES.notKept)]);
  });

  test("a result over 128 KiB is not stored: done without it, and this tab answers its redelivery from memory", async () => {
    const { browser, a, b } = twoTabs();
    a.sock().receive(callMsg("c1", "slow"));
    await flush();
    const big = "x".repeat(200 * 1024);
    a.h.finish("c1", big);
    await flush();
    const stored = browser.local.getItem("tabrelay:call:c1") ?? "";
    assert.ok(stored.length < 1024, "stored without the result");
    assert.equal(JSON.parse(stored).state, "done");
    a.sock().receive(callMsg("c1", "slow", undefined, { redelivery: 1 }));
    b.sock().receive(callMsg("c1", "slow", undefined, { redelivery: 1 }));
    await flush();
    assert.deepEqual(resultOf(a.sock(), "c1"), [{ data: big }, { data: big }]);
    assert.deepEqual(resultOf(b.sock(), "c1"), [refusal(SENTENCES.notKept)]);
    assert.equal(a.h.runs.length + b.h.runs.length, 1);
  });

  test("a write the full storage refuses prunes stale entries and tries again", async () => {
    const browser = new FakeBrowser();
    const small = new MemoryStorage(10_000);
    const { a } = twoTabs({ localStorage: small }, browser);
    a.sock().receive(callMsg("c0", "slow")); // the first claim prunes: nothing stale yet
    await flush();
    a.h.finish("c0", 0);
    await flush();
    small.items.set("tabrelay:call:old", JSON.stringify({ state: "done", keepUntil: 1, result: { data: "y".repeat(9800) } }));
    a.sock().receive(callMsg("c1", "slow"));
    await flush();
    assert.equal(a.h.runs.length, 2, "recorded and run");
    assert.ok(!small.getItem("tabrelay:call:old"), "the stale entry was pruned");
  });

  test("a cancel 'answered' for a call another tab ran: no result from this tab", async () => {
    const { browser, a, b } = twoTabs();
    a.sock().receive(callMsg("c1", "slow"));
    await flush();
    b.sock().receive(callMsg("c1", "slow", undefined, { redelivery: 1 }));
    await flush();
    b.sock().receive({ type: "cancel", id: "c1", reason: "answered" });
    a.h.finish("c1", "a");
    await browser.clock.advance(1000);
    assert.deepEqual(resultOf(b.sock(), "c1"), []);
  });

  test("records outlive their call's deadline by a margin, then go", async () => {
    const { browser, a } = twoTabs();
    a.sock().receive(callMsg("c1", "echo"));
    await flush();
    const keys = () => [...browser.local.items.keys()].filter((k) => k.startsWith("tabrelay:call:"));
    assert.deepEqual(keys(), ["tabrelay:call:c1"]);
    await browser.clock.advance(225_000 + 10 * 60_000 + 1);
    // Pruning runs at the next claim that prunes (the first of each 64).
    const fresh = browser.tab({ app, handlers: new TestHandlers().handlers });
    fresh.client.start();
    fresh.relay.last.welcome();
    fresh.relay.last.receive(callMsg("c2", "echo", {}, { deadline: browser.clock.t + 225_000 }));
    await flush();
    assert.deepEqual(keys(), ["tabrelay:call:c2"]);
  });
});
