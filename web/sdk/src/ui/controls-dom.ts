// What the person's control elements share: a node builder that only ever
// sets text (nothing from outside becomes HTML), one stylesheet per element
// themed by CSS custom properties, and a base class that exists in node.

/** Base is HTMLElement in a browser, and a stand-in where there is none (node imports this module). */
export const Base: typeof HTMLElement = typeof HTMLElement === "undefined" ? (class {} as unknown as typeof HTMLElement) : HTMLElement;

let ids = 0;
/** uid returns an id unique in the page, for aria-labelledby. */
export function uid(prefix: string): string {
  return `tabrelay-${prefix}-${++ids}`;
}

/** make builds an element with attributes; strings among children become text nodes. */
export function make<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, ...children: (Node | string)[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  el.append(...children);
  return el;
}

/** adoptStyle adds css once to the document (light DOM: the app's own rules can override it). */
export function adoptStyle(name: string, css: string): void {
  if (typeof document === "undefined" || document.querySelector(`style[data-tabrelay="${name}"]`)) return;
  document.head.append(make("style", { "data-tabrelay": name }, css));
}

/** define registers an element once, where custom elements exist. */
export function define(name: string, element: CustomElementConstructor): void {
  if (typeof customElements !== "undefined" && !customElements.get(name)) customElements.define(name, element);
}

/** typingElsewhere reports whether the person is typing in a field outside root: a new card must not take the focus then. */
export function typingElsewhere(root: Element): boolean {
  const a = typeof document === "undefined" ? null : document.activeElement;
  if (!a || root.contains(a)) return false;
  return a.matches("input:not([type=button],[type=checkbox],[type=radio],[type=submit]),textarea,select,[contenteditable]:not([contenteditable=false])");
}

/** The buttons' look, shared by the elements. */
export const BUTTON_CSS = `button{font:inherit;border-radius:var(--tabrelay-radius,6px);border:1px solid var(--tabrelay-border,#8886);padding:.3em .9em;cursor:pointer;background:var(--tabrelay-button-bg,transparent);color:inherit}
:focus-visible{outline:2px solid var(--tabrelay-focus,var(--tabrelay-accent,#1a5fd0));outline-offset:2px}`;
