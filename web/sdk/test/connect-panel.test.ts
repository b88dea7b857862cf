// <tabrelay-connect> against the DOM stand-in (test/dom.ts): the scope
// picker's checkboxes have ids of their own, whatever the tools and
// actions are named.

import assert from "node:assert/strict";
import { test } from "node:test";
import { defineApp } from "../src/tools.js";
import type { ConnectInfo } from "../src/requests.js";
import { doc, type FakeNode } from "./dom.js";

const { TabrelayConnect } = await import("../src/ui/connect.js");

test("checkbox ids are unique even when tool and action names contain '-', and each label names its own box", async () => {
  const schema = { type: "object", properties: { action: { type: "string" } } } as const;
  const app = defineApp({
    version: "ids-1", app: { name: "ids", title: "Ids" }, instructions: "Ids.",
    tools: [
      { name: "a-b", description: "One.", inputSchema: schema, result: "none", actions: [{ name: "c" }] },
      { name: "a", description: "Two.", inputSchema: schema, result: "none", actions: [{ name: "b-c" }] },
    ],
  });
  const info = {
    client: "Claude", clientKind: "metadata-document", clientUrl: "https://claude.ai/m", redirectHost: "claude.ai",
    expiresAt: Date.now() + 600_000, requestedScope: null,
  } as unknown as ConnectInfo;
  const el = new TabrelayConnect() as unknown as InstanceType<typeof TabrelayConnect>;
  doc.body.append(el as unknown as FakeNode);
  el.client = { app, connectInfo: async () => info, approve: async () => { throw new Error("unused"); }, decline: async () => {} };
  el.show("KQ7M-2XDP");
  await new Promise((resolve) => setImmediate(resolve));
  const root = el as unknown as FakeNode;
  const boxes = root.querySelectorAll("input[data-tool]");
  assert.equal(boxes.length, 4);
  const ids = boxes.map((b) => b.getAttribute("id"));
  assert.equal(new Set(ids).size, 4, `ids collide: ${ids.join(" ")}`);
  for (const b of boxes) assert.equal(b.parent?.querySelector("label")?.getAttribute("for"), b.getAttribute("id"));
});

test("the picker is the scope panel: a row per family with a switch and a count, a verb row per action", async () => {
  const schema = { type: "object", properties: { action: { type: "string" } } } as const;
  const app = defineApp({
    version: "f-1", app: { name: "fam", title: "Fam" }, instructions: "Fam.",
    tools: [
      { name: "list", title: "List", description: "Lists.", inputSchema: schema, result: "summaries", family: "read" },
      { name: "note", title: "Note", description: "Notes.", inputSchema: schema, result: "none", family: "change", permissions: [],
        actions: [{ name: "add" }, { name: "edit" }, { name: "tag" }] },
      { name: "drop", title: "Drop", description: "Drops.", inputSchema: schema, result: "none", family: "change", permissions: ["deletes-saved"] },
    ],
  });
  const info = {
    client: "Claude", clientKind: "metadata-document", clientUrl: "https://claude.ai/m", redirectHost: "claude.ai",
    expiresAt: Date.now() + 600_000, requestedScope: [{ tool: "note", actions: ["add", "edit", "tag"] }, { tool: "list" }],
  } as unknown as ConnectInfo;
  const el = new TabrelayConnect() as unknown as InstanceType<typeof TabrelayConnect>;
  doc.body.append(el as unknown as FakeNode);
  el.client = { app, connectInfo: async () => info, approve: async () => { throw new Error("unused"); }, decline: async () => {} };
  el.show("KQ7M-2XDP");
  await new Promise((resolve) => setImmediate(resolve));
  const root = el as unknown as FakeNode;
  const rows = root.querySelectorAll("fieldset[data-family]");
  assert.deepEqual(rows.map((r) => r.getAttribute("data-family")), ["read", "change"]);
  const change = rows[1]!;
  const count = () => change.querySelector("[data-part=count]")!.textContent;
  const toggle = change.querySelector("input[data-family]")! as FakeNode & { checked: boolean };
  assert.equal(toggle.getAttribute("role"), "switch");
  assert.equal(count(), "3/4", "the host's three actions of note ticked, drop (it asks) not");
  assert.equal(toggle.checked, true, "a row partly on shows its switch on");
  assert.deepEqual(change.querySelectorAll("input[data-action]").map((b) => b.getAttribute("data-action")), ["add", "edit", "tag"]);
  toggle.checked = false;
  toggle.dispatch("change");
  assert.equal(count(), "0/4");
  toggle.checked = true;
  toggle.dispatch("change");
  assert.equal(count(), "4/4");
  const drop = change.querySelector("input[data-tool=drop]")! as FakeNode & { checked: boolean };
  drop.checked = false;
  drop.dispatch("change");
  assert.equal(count(), "3/4");
  assert.equal(toggle.checked, true);
});
