// The card's side of MCP Apps (src/view-bridge.ts) against the package's
// own host side, AppBridge, over an in-memory channel in place of
// postMessage: the handshake, a tool result, a context change, a tool
// call and a link through the host, an error in words, and what a host
// may send that is not a message the card takes.

import assert from "node:assert/strict";
import { test } from "node:test";
import type { CallToolResult, JSONRPCMessage, Transport } from "@modelcontextprotocol/client";
import { AppBridge } from "@modelcontextprotocol/ext-apps/app-bridge";
import { View, type Port } from "../src/view-bridge.js";

/** channel joins a card's Port to a host's Transport; sent is every message the card posted. */
function channel() {
  let toView: ((m: unknown) => void) | undefined;
  const sent: JSONRPCMessage[] = [];
  const transport: Transport = {
    async start() {},
    async send(message) {
      const copy = structuredClone(message);
      setImmediate(() => toView?.(copy));
    },
    async close() {
      transport.onclose?.();
    },
  };
  const port: Port = {
    post: (m) => {
      sent.push(m);
      const copy = structuredClone(m);
      setImmediate(() => transport.onmessage?.(copy));
    },
    listen: (receive) => (toView = receive),
  };
  /** fromHost delivers raw as the host's window would. */
  const fromHost = (raw: unknown) => toView?.(raw);
  return { transport, port, sent, fromHost };
}

const picture: CallToolResult = { content: [{ type: "text", text: "<tabrelay-data>{\"notes\":2}</tabrelay-data>" }] };

async function connected() {
  const c = channel();
  const host = new AppBridge(null, { name: "test-host", version: "1.0.0" }, { openLinks: {}, serverTools: {} }, { hostContext: { theme: "dark" } });
  const initialized = new Promise<void>((resolve) => (host.oninitialized = () => resolve()));
  await host.connect(c.transport);
  const view = new View({ name: "card", version: "1.0.0" }, c.port);
  const results: CallToolResult[] = [];
  view.ontoolresult = (r) => results.push(r);
  const context = await view.connect();
  await initialized;
  return { ...c, host, view, results, context };
}

/** until waits for cond, turn by turn of the event loop. */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1000 && !cond(); i++) await new Promise((r) => setImmediate(r));
  assert.ok(cond(), what);
}

test("the handshake, a tool result and a context change reach the card", async () => {
  const { host, view, results, context } = await connected();
  assert.equal(context.theme, "dark");
  assert.equal(host.getAppVersion()?.name, "card");
  await host.sendToolResult(picture);
  await until(() => results.length === 1, "the tool result reached the card");
  assert.deepEqual(results[0], picture);
  const changes: unknown[] = [];
  view.onhostcontextchanged = (c) => changes.push(c);
  host.setHostContext({ theme: "light" });
  await until(() => changes.length === 1, "the context change reached the card");
  assert.equal(view.hostContext.theme, "light");
});

test("a tool call and a link go through the host; its error comes back in words", async () => {
  const { host, view } = await connected();
  const calls: string[] = [];
  host.oncalltool = async (params) => {
    calls.push(params.name);
    if (params.name === "broken") throw new Error("the backend is down");
    return picture;
  };
  const opened: string[] = [];
  host.onopenlink = async ({ url }) => (opened.push(url), {});
  assert.deepEqual(await view.callServerTool({ name: "board_picture", arguments: { width: 320 } }), picture);
  await assert.rejects(view.callServerTool({ name: "broken" }), /the backend is down/);
  assert.deepEqual(calls, ["board_picture", "broken"]);
  assert.deepEqual(await view.openLink({ url: "http://127.0.0.1:8080/demo/" }), {});
  assert.deepEqual(opened, ["http://127.0.0.1:8080/demo/"]);
});

test("the host's ping and teardown are answered; a request the card does not take is refused", async () => {
  const { sent, fromHost } = await connected();
  fromHost({ jsonrpc: "2.0", id: "p", method: "ping" });
  fromHost({ jsonrpc: "2.0", id: 7, method: "ui/resource-teardown", params: {} });
  fromHost({ jsonrpc: "2.0", id: 8, method: "tools/list", params: {} });
  const answers = sent.filter((m) => "id" in m && !("method" in m));
  assert.deepEqual(answers.slice(-3), [
    { jsonrpc: "2.0", id: "p", result: {} },
    { jsonrpc: "2.0", id: 7, result: {} },
    { jsonrpc: "2.0", id: 8, error: { code: -32601, message: "Method not found: tools/list" } },
  ]);
});

test("what is not a message the card takes is dropped, and the card goes on", async () => {
  const { host, view, results, sent, fromHost } = await connected();
  const before = sent.length;
  for (const raw of [
    "text", null, 42, [], {}, { jsonrpc: "1.0", method: "ui/notifications/tool-result", params: picture },
    { jsonrpc: "2.0", method: "ui/notifications/tool-result" }, // no params
    { jsonrpc: "2.0", method: "ui/notifications/tool-result", params: "a string" },
    { jsonrpc: "2.0", method: 12, params: {} },
    { jsonrpc: "2.0", id: 999, result: {} }, // an answer to nothing the card asked
    { jsonrpc: "2.0", id: { x: 1 }, method: "ping" }, // an id JSON-RPC does not allow
  ]) fromHost(raw);
  assert.equal(results.length, 0, "no tool result came of them");
  assert.equal(sent.length, before, "none was answered");
  host.oncalltool = async () => picture;
  assert.deepEqual(await view.callServerTool({ name: "board_picture" }), picture, "the card still works");
});
