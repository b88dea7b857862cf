// The client createTabrelay makes, in node against the SDK's scripted
// relay (web/sdk/test/fakes.ts): every declared tool has a handler, and a
// call that arrives while no mounted component registered its tool gets
// an error result that says so (not a crash, not a silent drop). The
// hooks themselves need a renderer with effects: the Chromium test
// (tests/browser_react_test.go) proves them in the React example.

import { strict as assert } from "node:assert";
import { test } from "node:test";
import { createElement } from "react";
import { renderToString } from "react-dom/server";
import { defineApp } from "@tabrelay/tab";
import { FakeClock, FakePage, FakeRelay, flush, MemoryStorage, SharedLocks } from "../../sdk/test/fakes.js";
import { createTabrelay, NO_HANDLER } from "../src/index.js";

const app = defineApp({
  version: "t-1", app: { name: "t", title: "T" }, instructions: "Test tools.",
  tools: [{ name: "find", description: "Finds.", result: "cells", inputSchema: { type: "object" } }],
});

function fixture() {
  const relay = new FakeRelay(), clock = new FakeClock();
  const environment = {
    WebSocket: relay.WebSocket, now: clock.now, setTimeout: clock.setTimeout, clearTimeout: clock.clearTimeout,
    random: () => 0.5, randomBytes: (b: Uint8Array) => b.fill(7), localStorage: new MemoryStorage(),
    locks: new SharedLocks().forTab("tab1"), page: new FakePage(), warn: () => {},
  };
  return { relay, clock, tabrelay: createTabrelay({ relay: "https://relay.test", app, environment }) };
}

test("a call for a tool no mounted component answers gets an error result that says so", async () => {
  const { relay, clock, tabrelay } = fixture();
  tabrelay.client.start();
  relay.last.welcome();
  relay.last.receive({ type: "call", id: "c1", tool: "find", arguments: {}, deadline: clock.t + 60_000, turn: "t1",
    connection: { id: "k1", kind: "oauth", client: "Host", host: "host.test" } });
  for (let i = 0; i < 20 && relay.last.sent("result").length === 0; i++) await flush();
  const [result] = relay.last.sent("result");
  assert.ok(result, "the call got no result");
  assert.equal(result["id"], "c1");
  assert.match(JSON.stringify(result), new RegExp(NO_HANDLER("find").slice(0, 40)));
  tabrelay.client.stop();
});

test("a server render shows the idle status and opens no socket", () => {
  const { relay, tabrelay } = fixture();
  const Status = () => createElement("p", null, tabrelay.useTabrelay().status.state);
  assert.equal(renderToString(createElement(Status)), "<p>idle</p>");
  assert.equal(relay.sockets.length, 0);
});
