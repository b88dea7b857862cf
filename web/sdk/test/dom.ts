// A small stand-in of the DOM for the UI elements' tests (node has none):
// just enough of Element and document for the confirm card and the Connect
// panel. Importing it installs HTMLElement and document on globalThis; a
// test then imports the element's module dynamically, after it.

/** FakeNode is just enough of an Element for the confirm card. */
export class FakeNode {
  readonly attrs = new Map<string, string>();
  children: FakeNode[] = [];
  parent: FakeNode | undefined;
  text = "";
  private readonly listeners = new Map<string, ((ev: unknown) => void)[]>();
  constructor(readonly tag = "") {}
  dataset: Record<string, string> = {};
  get textContent(): string {
    return this.tag === "#text" ? this.text : this.children.map((c) => c.textContent).join("");
  }
  set textContent(t: string) {
    this.children = [];
    if (t) this.append(t);
  }
  replaceChildren(...nodes: (FakeNode | string)[]): void {
    for (const c of this.children) c.parent = undefined;
    this.children = [];
    this.append(...nodes);
  }
  getAttribute(k: string): string | null {
    return this.attrs.get(k) ?? null;
  }
  setAttribute(k: string, v: string): void {
    if (k.startsWith("data-")) this.dataset[k.slice(5).replace(/-(\w)/g, (_, c: string) => c.toUpperCase())] = String(v);
    this.attrs.set(k, String(v));
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
  hasAttribute(k: string): boolean {
    return this.attrs.has(k);
  }
  removeAttribute(k: string): void {
    this.attrs.delete(k);
  }
  get parentElement(): FakeNode | null {
    return this.parent ?? null;
  }
  /** closest takes what querySelectorAll does, from this node up. */
  closest(sel: string): FakeNode | null {
    for (let x: FakeNode | undefined = this; x; x = x.parent) if (selects(sel, x)) return x;
    return null;
  }
  addEventListener(type: string, fn: (ev: unknown) => void): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), fn]);
  }
  dispatch(type: string, ev: unknown = {}): void {
    for (const fn of this.listeners.get(type) ?? []) fn(ev);
  }
  dispatchEvent(ev: { type: string }): boolean {
    this.dispatch(ev.type, ev);
    return true;
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
  /** querySelectorAll takes a tag, then any of `[attr]` and `[attr=value]`. */
  querySelectorAll(sel: string): FakeNode[] {
    const out: FakeNode[] = [];
    const walk = (n: FakeNode): void => {
      for (const c of n.children) {
        if (selects(sel, c)) out.push(c);
        walk(c);
      }
    };
    walk(this);
    return out;
  }
  querySelector(sel: string): FakeNode | null {
    return this.querySelectorAll(sel)[0] ?? null;
  }
}

/** selects tells whether n is what sel (a tag, then any of `[attr]` and `[attr=value]`) selects. */
function selects(sel: string, n: FakeNode): boolean {
  const m = /^([\w-]*)((?:\[[\w-]+(?:="?[^\]"]*"?)?\])*)$/.exec(sel);
  if (!m) throw new Error("unsupported selector " + sel);
  const [, tag, attrs] = m;
  if (tag && n.tag !== tag) return false;
  for (const [, attr, eq, value] of attrs!.matchAll(/\[([\w-]+)(=?)"?([^\]"]*)"?\]/g)) {
    if (eq ? n.attrs.get(attr!) !== value : !n.attrs.has(attr!)) return false;
  }
  return true;
}

export const doc = {
  body: new FakeNode("body"),
  head: new FakeNode("head"),
  activeElement: null as FakeNode | null,
  createElement: (tag: string) => new FakeNode(tag),
  querySelector: (sel: string) => doc.head.querySelector(sel),
  getElementById: (id: string) => doc.head.querySelector(`[id=${id}]`) ?? doc.body.querySelector(`[id=${id}]`),
};
doc.activeElement = doc.body;
Object.assign(globalThis, {
  HTMLElement: FakeNode, document: doc,
  window: { addEventListener() {}, removeEventListener() {} },
});
