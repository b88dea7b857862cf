// <tabrelay-notice> against a small stand-in of the DOM (issue 24 item 8):
// hidden until an agent first acts on the document shown, then the
// sentence (a live region), the document's switch and Got it, which hides
// it for that document.

import assert from "node:assert/strict";
import { test } from "node:test";
import { defineApp } from "../src/tools.js";
import { createPermissions } from "../src/ui/permissions-model.js";
import { doc, FakeNode } from "./dom.js";
import { FakeBrowser, FakeSite, flush } from "./fakes.js";

const { TabrelayNotice } = await import("../src/ui/notice.js");
const { messages } = await import("../src/ui/messages.js");

const app = defineApp({
  version: "n-1", app: { name: "boards", title: "Boards" }, instructions: "Boards.",
  tools: [{ name: "count", description: "Counts.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true }, result: "summaries" }],
});

test("the notice shows once an agent acts on a document, with its switch; Got it hides it for that document", async () => {
  const perms = createPermissions({ app, environment: new FakeSite().env() });
  perms.setDocument({ id: "b1", name: "Work <board>" });
  const tab = new FakeBrowser().tab({ app, handlers: { count: () => 1 }, permissions: perms });
  tab.client.start();
  tab.relay.last.welcome();
  const el = new TabrelayNotice() as unknown as InstanceType<typeof TabrelayNotice> & FakeNode;
  doc.body.append(el);
  el.connectedCallback();
  el.permissions = perms;
  const node = el as unknown as FakeNode;
  const text = node.querySelector("[data-part=text]")!;
  const body = node.querySelector("[data-part=body]")! as FakeNode & { hidden?: boolean };
  assert.equal(text.getAttribute("role"), "status");
  assert.equal(text.textContent, "");
  assert.equal(body.hidden, true);
  tab.relay.last.receive({ type: "call", id: "c1", tool: "count", arguments: {}, connection: { id: "k1", kind: "connector", client: "Claude", host: "claude.ai" }, turn: "t1", deadline: 0 });
  await flush();
  assert.equal(text.textContent, messages().notice.text("Work <board>"));
  assert.match(text.textContent, /names, counts and summaries of “Work <board>”, and cell values and pictures when they ask/);
  assert.equal(body.hidden, false);
  assert.equal((node.querySelector("tabrelay-data-switch") as unknown as { permissions: unknown }).permissions, perms, "the document's switch is in it");
  node.querySelector("button[data-part=got-it]")!.dispatch("click");
  assert.equal(body.hidden, true);
  assert.equal(text.textContent, "");
});
