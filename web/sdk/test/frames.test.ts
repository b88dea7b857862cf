// Each frame from the relay is read once into a typed message (src/frames.ts):
// a good message of every type the relay sends, and the ways a frame can
// be wrong — each either reads with its field's stated default or is
// unreadable with the sentence the client warns with.

import assert from "node:assert/strict";
import { test } from "node:test";
import { parseFrame, type RelayMessage } from "../src/frames.js";
import { RELAY_MESSAGE_TYPES } from "../src/wire.js";

const read = (m: unknown): RelayMessage => parseFrame(JSON.stringify(m));
/** field reads one field of a message as read. */
const field = (m: unknown, key: string): unknown => (read(m) as unknown as Record<string, unknown>)[key];
const conn = { id: "conn_1", kind: "connector", client: "Claude", host: "claude.ai" };

test("every type the relay sends reads as itself", () => {
  const good: Record<(typeof RELAY_MESSAGE_TYPES)[number], Record<string, unknown>> = {
    welcome: { protocol: 1, pairing: "p1", pingIntervalMs: 25000, maxMessageBytes: 16777216 },
    call: { id: "c1", tool: "echo", arguments: { value: 1 }, connection: conn, turn: "t1", deadline: 5, redelivery: 1 },
    cancel: { id: "c1", reason: "timeout" },
    connections: { connections: [] },
    scope: {},
    ping: {},
    drain: { reconnectAfterMs: 4210 },
    done: { ref: "r1" },
    "permissions-query": { id: "q1", tools: ["echo"], connection: conn },
    error: { ref: "r1", code: "wrong-code", message: "No such code." },
  };
  for (const type of RELAY_MESSAGE_TYPES) assert.equal(read({ type, ...good[type] }).type, type, type);
  assert.equal(read({ type: "connect-info", ref: "r2", client: "Claude" }).type, "connect-info");
  assert.deepEqual(read({ type: "call", ...good.call }), {
    type: "call", id: "c1", tool: "echo", arguments: { value: 1 }, connection: conn, turn: "t1", deadline: 5, redelivery: 1,
  });
  assert.deepEqual(read({ type: "welcome", ...good.welcome }), { type: "welcome", pairing: "p1", pingIntervalMs: 25000, maxMessageBytes: 16777216 });
});

test("what is not a JSON object with a string type is unreadable", () => {
  for (const frame of ["{not json", "[1,2]", "null", '"welcome"', "7", '{"no":"type"}', '{"type":7}', ""]) {
    assert.deepEqual(parseFrame(frame), { type: "unreadable", why: "a frame from the relay that is not a JSON message was ignored" }, frame);
  }
});

test("a call, cancel or permissions-query without a string id is unreadable", () => {
  for (const type of ["call", "cancel", "permissions-query"]) {
    for (const id of [undefined, "", 7, null, ["c1"], { id: "c1" }]) {
      assert.deepEqual(read({ type, id, tool: "echo" }), { type: "unreadable", why: `a "${type}" without an id was ignored` }, `${type} ${JSON.stringify(id)}`);
    }
  }
});

test("an unknown type is unreadable, named (cut) in the sentence", () => {
  const m = read({ type: "x-new-feature", ref: "r9" });
  assert.deepEqual(m, { type: "unreadable", why: 'a relay message of unknown type "x-new-feature" was ignored' });
  const long = read({ type: "y".repeat(500) });
  assert.ok(long.type === "unreadable" && long.why.length < 140, "a long type is cut");
});

test("fields of the wrong type read as their defaults", () => {
  assert.deepEqual(read({ type: "welcome", pairing: 5, pingIntervalMs: "25000", maxMessageBytes: -1 }),
    { type: "welcome", pairing: "", pingIntervalMs: undefined, maxMessageBytes: undefined });
  assert.equal(parseFrame('{"type":"welcome","pingIntervalMs":1e999}').type, "welcome");
  assert.equal((parseFrame('{"type":"welcome","pingIntervalMs":1e999}') as { pingIntervalMs?: number }).pingIntervalMs, undefined, "Infinity is no interval");
  assert.deepEqual(read({ type: "call", id: "c1", tool: 12, arguments: [1], connection: "x", turn: {}, deadline: "soon", redelivery: null }), {
    type: "call", id: "c1", tool: "", arguments: null, connection: { id: "", kind: "", client: "", host: "" }, turn: "", deadline: 0, redelivery: 0,
  });
  assert.deepEqual(field({ type: "call", id: "c1", tool: "echo" }, "arguments"), {}, "absent arguments are {}");
  assert.deepEqual(read({ type: "cancel", id: "c1", reason: 3 }), { type: "cancel", id: "c1", reason: "cancelled" });
  assert.deepEqual(read({ type: "permissions-query", id: "q1", tools: ["a", 2, null, "b"] }),
    { type: "permissions-query", id: "q1", tools: ["a", "b"], connection: { id: "", kind: "", client: "", host: "" } });
  assert.deepEqual(field({ type: "permissions-query", id: "q1", tools: "a" }, "tools"), []);
  assert.deepEqual(read({ type: "drain", reconnectAfterMs: "4210" }), { type: "drain", reconnectAfterMs: 0 });
  assert.deepEqual(read({ type: "error", ref: 4, code: 5, message: {} }), { type: "error", ref: undefined, code: "unknown", message: "" });
  assert.deepEqual(read({ type: "connections", ref: "r1", connections: { a: 1 } }), { type: "connections", ref: "r1", connections: undefined });
  assert.deepEqual(field({ type: "connections", connections: [1, "conn_x", null, [], { client: "No id" }, { id: 7 }, { id: "conn_1" }] }, "connections"),
    [{ id: "conn_1", client: "", host: "", createdAt: 0, lastUsedAt: 0, scope: [] }], "items that are no connection with an id are left out");
  const done = read({ type: "done", ref: "r1", connection: { id: "c", createdAt: "x", scope: [{ tool: "echo", actions: ["a", 1] }, "junk"] }, confirm: 5 });
  assert.deepEqual(done, {
    type: "done", ref: "r1", confirm: "",
    connection: { id: "c", client: "", host: "", createdAt: 0, lastUsedAt: 0, scope: [{ tool: "echo", actions: ["a"] }] },
  });
});
