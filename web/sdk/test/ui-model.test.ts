import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { errorWords, ERROR_WORDS, ScopeModel, whoAsks } from "../src/ui/model.js";
import { RelayError, REQUEST_MESSAGES } from "../src/requests.js";
import { app } from "./app.js";

describe("the scope picker", () => {
  test("nothing is ticked when the host asked for nothing", () => {
    const m = new ScopeModel(app, null);
    assert.deepEqual(m.scope(), []);
    assert.equal(m.ticked("echo"), false);
    assert.deepEqual(m.tools.map((t) => t.name), ["echo", "counter", "slow", "fail", "picture"]);
    assert.deepEqual(m.tools[1]!.actions.map((a) => a.name), ["get", "increment"]);
  });

  test("what the host asked for is ticked, and only what this app declares", () => {
    const m = new ScopeModel(app, [
      { tool: "echo" }, { tool: "counter", actions: ["get", "reset"] }, { tool: "nope" }, { tool: "slow", actions: ["*"] },
    ]);
    assert.deepEqual(m.scope(), [{ tool: "echo" }, { tool: "counter", actions: ["get"] }, { tool: "slow" }]);
    assert.equal(m.ticked("counter", "get"), true);
    assert.equal(m.ticked("counter", "increment"), false);
    assert.equal(m.ticked("counter"), false);
    const all = new ScopeModel(app, [{ tool: "counter" }]);
    assert.deepEqual(all.scope(), [{ tool: "counter", actions: ["*"] }]);
    assert.equal(all.ticked("counter", "increment"), true, "an action is chosen with its whole tool");
  });

  test("ticking builds the scope in the app's order; the whole tool wins over single actions", () => {
    const m = new ScopeModel(app, null);
    m.set("picture", undefined, true);
    m.set("counter", "increment", true);
    m.set("echo", undefined, true);
    assert.deepEqual(m.scope(), [{ tool: "echo" }, { tool: "counter", actions: ["increment"] }, { tool: "picture" }]);
    m.set("counter", undefined, true);
    assert.deepEqual(m.scope()[1], { tool: "counter", actions: ["*"] });
    m.set("counter", undefined, false);
    m.set("counter", "increment", false);
    m.set("echo", undefined, false);
    assert.deepEqual(m.scope(), [{ tool: "picture" }]);
  });
});

describe("who asks, in words", () => {
  const base = { client: "E2E Host", clientKind: "registered", clientUrl: "", redirectHost: "127.0.0.1:33418", requestedScope: null, expiresAt: 10 * 60_000 };
  test("a registered client calls itself its name; a metadata document's shows its site", () => {
    const w = whoAsks(base, 0, () => "10:10");
    assert.equal(w.name, "E2E Host");
    assert.match(w.identity, /calls itself “E2E Host”/);
    assert.match(w.redirect, /127\.0\.0\.1:33418/);
    assert.equal(w.expiry, "The code expires at 10:10 (in 10 minutes).");
    const m = whoAsks({ ...base, client: "Claude", clientKind: "metadata-document", clientUrl: "https://claude.ai/oauth/client.json" }, 0);
    assert.equal(m.identity, "Claude, as published by claude.ai.");
  });
  test("an expired code says so; an empty name is named", () => {
    const w = whoAsks({ ...base, client: "" }, 11 * 60_000);
    assert.equal(w.expiry, "The code has expired.");
    assert.equal(w.name, "An application without a name");
    assert.match(whoAsks(base, 9.5 * 60_000, () => "x").expiry, /in 1 minute\)/);
  });
});

test("every relay error is put in words", () => {
  for (const code of ["wrong-code", "code-used", "code-expired", "limited", "invalid-scope", "unavailable", "unsupported"]) {
    assert.equal(errorWords(new RelayError(code, "the relay's")), ERROR_WORDS[code]);
  }
  assert.equal(errorWords(new RelayError("lost", REQUEST_MESSAGES.lost)), REQUEST_MESSAGES.lost);
  assert.equal(errorWords(new RelayError("x-new", "A new sentence.")), "A new sentence.");
  assert.equal(errorWords(undefined), "Something went wrong. Try again.");
});
