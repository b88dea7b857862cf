// <tabrelay-confirm> against a small stand-in of the DOM (node has none):
// a card removed from the page answers its question, and the focus goes
// back where it was before the first card took it.

import assert from "node:assert/strict";
import { test } from "node:test";
import type { Answer, Question } from "../src/ui/permissions-model.js";

import { doc, FakeNode } from "./dom.js";

const { TabrelayConfirm } = await import("../src/ui/confirm-card.js");

function question(id: string): Question & { shown: number } {
  const q = {
    id, connection: { id: "conn_1", kind: "connector", client: "Claude", host: "claude.ai" }, who: "Claude (claude.ai)",
    tool: "file", action: "delete", title: "File (delete)", arguments: {}, details: "{}", kinds: [], reasons: ["It deletes something saved."],
    turn: "t1", signal: new AbortController().signal, shown: 0,
    showing: () => void q.shown++,
  };
  return q as unknown as Question & { shown: number };
}

function mount() {
  const el = new TabrelayConfirm() as unknown as InstanceType<typeof TabrelayConfirm> & FakeNode;
  doc.body.append(el);
  el.connectedCallback();
  return el;
}

test("a confirm card taken out of the page answers its open questions, so the relay hears answered", async () => {
  const el = mount();
  let settled: Answer | undefined;
  void el.show(question("c1")).then((a) => (settled = a));
  assert.ok(el.querySelector("[role=alertdialog]"), "the card shows");
  el.remove();
  el.disconnectedCallback();
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(settled, "deny");
  assert.equal(el.querySelector("[role=alertdialog]"), null);
});

test("after the last card, the focus goes back to what had it before the first", async () => {
  const field = new FakeNode("button");
  doc.body.append(field);
  field.focus();
  const el = mount();
  const one = el.show(question("c1"));
  const two = el.show(question("c2"));
  const find = (root: unknown, sel: string) => (root as FakeNode).querySelector(sel)!;
  const first = find(el, "[data-call=c1]");
  assert.equal(doc.activeElement, first, "the first card takes the focus");
  find(first, "button[data-answer=once]").dispatch("click");
  assert.equal(await one, "once");
  assert.equal(doc.activeElement, el.querySelector("[data-call=c2]"), "then the next card");
  find(find(el, "[data-call=c2]"), "button[data-answer=deny]").dispatch("click");
  assert.equal(await two, "deny");
  assert.equal(doc.activeElement, field, "then what had it before");
});

test("a card that goes unanswered (its call cancelled, timed out or withdrawn) leaves a line saying so; an answered one does not", async () => {
  const el = mount();
  const status = (el as FakeNode).querySelector("[role=status]")!;
  const moot = new AbortController();
  const q1 = Object.assign(question("c1"), { signal: moot.signal });
  void el.show(q1);
  moot.abort();
  assert.equal(el.querySelector("[data-call=c1]"), null, "the card goes");
  assert.equal(status.textContent, "Claude (claude.ai) no longer asks to run File (delete).");
  const answered = new AbortController();
  const q2 = Object.assign(question("c2"), { signal: answered.signal });
  const two = el.show(q2);
  assert.equal(status.textContent, "", "a new card clears the line");
  const find = (root: unknown, sel: string) => (root as FakeNode).querySelector(sel)!;
  find(find(el, "[data-call=c2]"), "button[data-answer=once]").dispatch("click");
  assert.equal(await two, "once");
  answered.abort(); // the model ends an answered question's signal too
  assert.equal(status.textContent, "", "answered is no news");
});
