import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { en, type ErrorCode } from "../src/ui/index.js";
import { errorWords, ScopeModel, typedWords, whoAsks } from "../src/ui/connect-model.js";
import { connectInfoOf, RelayError, REQUEST_MESSAGES } from "../src/requests.js";
import { defineApp } from "../src/tools.js";
import { app } from "./app.js";

describe("the scope panel's rows (seed 004)", () => {
  const schema = { type: "object", properties: { action: { type: "string" } } } as const;
  const mail = defineApp({
    version: "m-1", app: { name: "mail", title: "Mail" }, instructions: "Mail.",
    tools: [
      { name: "inbox", title: "Inbox", description: "Reads mail.", inputSchema: schema, result: "summaries", family: "mail" },
      { name: "linkedin", title: "LinkedIn", description: "LinkedIn.", inputSchema: schema, result: "none", family: "linkedin",
        actions: [{ name: "read-chat" }, { name: "sync-chat" }, { name: "send-message", permissions: ["publishes"] }] },
      { name: "drafts", title: "Drafts", description: "Drafts mail.", inputSchema: schema, result: "none", family: "mail",
        actions: [{ name: "draft-email", description: "Writes a draft." }] },
      { name: "clock", title: "Clock", description: "The time.", inputSchema: schema, result: "summaries" },
    ],
  });

  test("tools grouped by family in the app's order, a tool of none a row of its own; a verb row per action", () => {
    const m = new ScopeModel(mail, null);
    assert.deepEqual(m.families.map((f) => [f.name, f.title, f.tools.map((t) => t.name)]), [
      ["mail", "Mail", ["inbox", "drafts"]], ["linkedin", "Linkedin", ["linkedin"]], ["clock", "Clock", ["clock"]],
    ]);
    assert.deepEqual(m.families[0]!.verbs.map((v) => [v.tool, v.action, v.label]), [["inbox", undefined, "Inbox"], ["drafts", "draft-email", "Drafts: draft-email"]]);
    assert.deepEqual(m.families[1]!.verbs.map((v) => v.action), ["read-chat", "sync-chat", "send-message"]);
  });

  test("a row's count is its verbs chosen of all; its switch turns the whole row on (also later actions) or off", () => {
    const m = new ScopeModel(mail, [{ tool: "linkedin", actions: ["read-chat", "sync-chat"] }]);
    const [mailRow, linkedin] = m.families;
    assert.deepEqual(m.count(linkedin!), { on: 2, of: 3 });
    assert.deepEqual(m.count(mailRow!), { on: 0, of: 2 });
    m.setFamily(mailRow!, true);
    assert.deepEqual(m.count(mailRow!), { on: 2, of: 2 });
    assert.deepEqual(m.scope(), [{ tool: "inbox" }, { tool: "linkedin", actions: ["read-chat", "sync-chat"] }, { tool: "drafts", actions: ["*"] }]);
    m.setFamily(linkedin!, false);
    assert.deepEqual(m.count(linkedin!), { on: 0, of: 3 });
    m.set("linkedin", "send-message", true);
    assert.deepEqual(m.count(linkedin!), { on: 1, of: 3 }, "one verb back: the row is partly on");
    assert.deepEqual(m.scope(), [{ tool: "inbox" }, { tool: "linkedin", actions: ["send-message"] }, { tool: "drafts", actions: ["*"] }]);
  });
});

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

  test("nothing that asks the person is ticked, whatever the host asked for (issue 23)", () => {
    const schema = { type: "object", properties: { action: { type: "string" } } } as const;
    const notes = defineApp({
      version: "n-1", app: { name: "notes", title: "Notes" }, instructions: "Notes.",
      tools: [
        { name: "list_notes", description: "Lists.", inputSchema: schema, result: "summaries", annotations: { readOnlyHint: true } },
        { name: "delete_note", description: "Deletes.", inputSchema: schema, result: "none", permissions: ["deletes-saved"] },
        { name: "wipe", description: "Wipes.", inputSchema: schema, result: "none", annotations: { destructiveHint: true } },
        { name: "board", description: "A board.", inputSchema: schema, result: "none",
          actions: [{ name: "read", permissions: [] }, { name: "move", permissions: ["change"] }] },
      ],
    });
    const asked = [{ tool: "list_notes" }, { tool: "delete_note" }, { tool: "wipe" }, { tool: "board", actions: ["*"] }];
    const m = new ScopeModel(notes, asked, true);
    assert.deepEqual(m.scope(), [{ tool: "list_notes" }, { tool: "board", actions: ["read"] }]);
    assert.equal(m.ticked("board"), false, "a whole tool with actions is never ticked for the person: its later actions may ask");
    assert.equal(new ScopeModel(notes, [{ tool: "board", actions: ["move"] }], true).ticked("board", "move"), false);
    // A connection's own scope, edited later, is shown as it is.
    assert.deepEqual(new ScopeModel(notes, asked).scope(), [{ tool: "list_notes" }, { tool: "delete_note" }, { tool: "wipe" }, { tool: "board", actions: ["*"] }]);
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
  const base = connectInfoOf({ client: "E2E Host", clientKind: "registered", clientUrl: "", redirectHost: "127.0.0.1:33418", requestedScope: null, expiresAt: 10 * 60_000 });
  test("a registered client calls itself its name; a metadata document's shows its site", () => {
    const w = whoAsks(base, 0, () => "10:10");
    assert.equal(w.name, "E2E Host");
    assert.match(w.identity, /calls itself “E2E Host”/);
    assert.match(w.redirect, /127\.0\.0\.1:33418/);
    assert.doesNotMatch(w.redirect, /who gets/, "the panel never claims who gets the connection");
    assert.equal(w.expiry, "The code expires at 10:10 (in 10 minutes).");
    const m = whoAsks({ ...base, client: "Claude", clientKind: "metadata-document", clientUrl: "https://claude.ai/oauth/client.json" }, 0);
    assert.equal(m.identity, "Claude, as published by claude.ai.");
  });
  test("a look-alike host is shown in ASCII with a warning", () => {
    const w = whoAsks({ ...base, redirectHost: "xn--clude-5ve.ai", redirectHostMixedScript: true }, 0);
    assert.match(w.redirect, /xn--clude-5ve\.ai/);
    assert.match(w.redirect, /mixes letters of different alphabets/);
    assert.match(whoAsks({ ...base, redirectHost: "xn--mnchen-3ya.de" }, 0).redirect, /ASCII form/);
  });
  test("a typed code says who gets it is unknown, and where the request started", () => {
    const t = typedWords({ ...base, startedAt: 5, device: "Chrome on Linux", sameAddress: false }, () => "10:02");
    assert.match(t.warning, /cannot tell who will get this connection/);
    assert.equal(t.provenance, "The request was started at 10:02 from Chrome on Linux, from another network address than this browser.");
    assert.match(typedWords({ ...base, sameAddress: true }, () => "x").provenance, /device the relay could not name, from the same network address/);
    assert.equal(typedWords({ ...base, crossDevice: false }).warning, en.errors["cross-device-off"]);
  });
  test("an expired code says so; an empty name is named", () => {
    const w = whoAsks({ ...base, client: "" }, 11 * 60_000);
    assert.equal(w.expiry, "The code has expired.");
    assert.equal(w.name, "An application without a name");
    assert.match(whoAsks(base, 9.5 * 60_000, () => "x").expiry, /in 1 minute\)/);
  });
});

test("every relay error is put in words", () => {
  for (const code of ["wrong-code", "code-used", "code-expired", "limited", "invalid-scope", "unavailable", "unsupported", "cross-device-off"] as ErrorCode[]) {
    assert.equal(errorWords(new RelayError(code, "the relay's")), en.errors[code]);
  }
  assert.equal(errorWords(new RelayError("lost", REQUEST_MESSAGES.lost)), REQUEST_MESSAGES.lost);
  assert.equal(errorWords(new RelayError("x-new", "A new sentence.")), "A new sentence.");
  assert.equal(errorWords(undefined), "Something went wrong. Try again.");
});
