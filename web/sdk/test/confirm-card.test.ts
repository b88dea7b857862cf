// <tabrelay-confirm> against a small stand-in of the DOM (node has none):
// a card removed from the page answers its question, and the focus goes
// back where it was before the first card took it.

import assert from "node:assert/strict";
import { test } from "node:test";
import type { Answer, Question } from "../src/ui/permissions.js";

/** FakeNode is just enough of an Element for the confirm card. */
class FakeNode {
  readonly attrs = new Map<string, string>();
  children: FakeNode[] = [];
  parent: FakeNode | undefined;
  text = "";
  private readonly listeners = new Map<string, ((ev: unknown) => void)[]>();
  constructor(readonly tag = "") {}
  setAttribute(k: string, v: string): void {
    this.attrs.set(k, String(v));
  }
  getAttribute(k: string): string | null {
    return this.attrs.get(k) ?? null;
  }
  append(...nodes: (FakeNode | string)[]): void {
    for (const n of nodes) {
      const node = typeof n === "string" ? Object.assign(new FakeNode("#text"), { text: n }) : n;
      node.remove();
      node.parent = this;
      this.children.push(node);
    }
  }
  remove(): void {
    if (this.parent) this.parent.children = this.parent.children.filter((c) => c !== this);
    this.parent = undefined;
  }
  addEventListener(type: string, fn: (ev: unknown) => void): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), fn]);
  }
  dispatch(type: string, ev: unknown = {}): void {
    for (const fn of this.listeners.get(type) ?? []) fn(ev);
  }
  contains(n: unknown): boolean {
    for (let x = n as FakeNode | undefined; x; x = x.parent) if (x === this) return true;
    return false;
  }
  focus(): void {
    doc.activeElement = this;
  }
  matches(): boolean {
    return false;
  }
  get isConnected(): boolean {
    let x: FakeNode = this;
    while (x.parent) x = x.parent;
    return x === doc.body;
  }
  /** querySelector takes `tag`, `[attr=value]` or `tag[attr=value]`. */
  querySelector(sel: string): FakeNode | null {
    const m = /^(\w*)(?:\[([\w-]+)=?"?([^\]"]*)"?\])?$/.exec(sel);
    if (!m) throw new Error("unsupported selector " + sel);
    const [, tag, attr, value] = m;
    const walk = (n: FakeNode): FakeNode | null => {
      for (const c of n.children) {
        if ((!tag || c.tag === tag) && (!attr || c.attrs.get(attr) === value)) return c;
        const found = walk(c);
        if (found) return found;
      }
      return null;
    };
    return walk(this);
  }
}

const doc = {
  body: new FakeNode("body"),
  head: new FakeNode("head"),
  activeElement: null as FakeNode | null,
  createElement: (tag: string) => new FakeNode(tag),
  querySelector: (sel: string) => doc.head.querySelector(sel),
};
doc.activeElement = doc.body;
Object.assign(globalThis, { HTMLElement: FakeNode, document: doc });
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
