// What the SDK's elements share, the UI module's (src/ui) and the chat's
// (src/chat, a bundle of its own that must not carry the UI): a node
// builder that only ever sets text (nothing from outside becomes HTML),
// one stylesheet per element themed by CSS custom properties (adopted, so
// a strict CSP lets it apply), a base class that exists in node, and one
// that shows a source the app sets and follows its changes and the
// messages table's. Each entry bundles this module, and its declarations
// go into each entry's .d.ts (scripts/build.mjs).

import { follow, unfollow } from "../chat-messages.js";

/** Base is HTMLElement in a browser, and a stand-in where there is none (node imports this module). */
export const Base: typeof HTMLElement = typeof HTMLElement === "undefined" ? (class {} as unknown as typeof HTMLElement) : HTMLElement;

/** What an element can show and follow: onChange calls back at every change and returns how to stop. */
export interface Source {
  onChange(listener: () => void): () => void;
}

/**
 * Showing is an element that shows one source the app sets (its
 * `permissions`, its `turns`: a subclass names the property and passes it
 * to `source`). It draws on connecting, on a new source, at every change of
 * the source, and — in the words of a new messages table (setMessages) —
 * relabel, which draws by default; disconnected, it lets go of both.
 */
export abstract class Showing<S extends Source> extends Base {
  private shown: S | undefined;
  private stop: (() => void) | undefined;
  /** The element's stylesheet (elementStyle). */
  protected abstract readonly sheet: ElementStyle;

  /** draw shows the source as it is now (undefined: none set yet). */
  protected abstract draw(): void;

  /** relabel draws again in a new table's words. */
  protected relabel(): void {
    this.draw();
  }

  protected get source(): S | undefined {
    return this.shown;
  }

  protected set source(s: S | undefined) {
    this.shown = s;
    if (this.isConnected) this.watch();
  }

  connectedCallback(): void {
    adoptStyle(this, this.sheet);
    follow(this, () => this.relabel());
    this.watch();
  }

  disconnectedCallback(): void {
    unfollow(this);
    this.stop?.();
    this.stop = undefined;
  }

  private watch(): void {
    this.stop?.();
    this.stop = this.shown?.onChange(() => this.draw());
    this.draw();
  }
}

let ids = 0;
/** uid returns an id unique in the page, for aria-labelledby. */
export function uid(prefix: string): string {
  return `tabrelay-${prefix}-${++ids}`;
}

/**
 * make builds an element with attributes (true sets an empty one, false or
 * undefined none); strings among children become text nodes.
 */
export function make<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string | boolean | undefined> = {}, ...children: (Node | string)[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === true) el.setAttribute(k, "");
    else if (typeof v === "string") el.setAttribute(k, v);
  }
  el.append(...children);
  return el;
}

/** button builds a button (type=button; attrs and children as make's) that calls act when pressed. */
export function button(attrs: Record<string, string | boolean | undefined>, act: () => void, ...children: (Node | string)[]): HTMLButtonElement {
  const b = make("button", { type: "button", ...attrs }, ...children);
  b.addEventListener("click", act);
  return b;
}

/**
 * refocus gives the focus to the element under root whose data-key is key:
 * a button drawn again keeps the focus the person left on it.
 */
export function refocus(root: ParentNode, key: string): void {
  const escaped = globalThis.CSS?.escape ? globalThis.CSS.escape(key) : key.replace(/["\\]/g, "\\$&");
  root.querySelector<HTMLElement>(`[data-key="${escaped}"]`)?.focus();
}

/** An element's stylesheet, registered by elementStyle when its module loads. */
export interface ElementStyle {
  readonly name: string;
  readonly css: string;
}

const styles: ElementStyle[] = [];
const sheets = new Map<ElementStyle, CSSStyleSheet>();

/**
 * The page's style nonce is kept where every module of the SDK in the page
 * finds it (each bundles its own copy of this file), as the messages table
 * is (chat-messages.ts): the UI module's setStyleNonce reaches the chat's
 * element too.
 */
const page = globalThis as Record<symbol, string | undefined>;
const STYLE_NONCE = Symbol.for("tabrelay.styleNonce");

/** elementStyle registers an element's CSS (uiStylesheet joins them all: dist/tabrelay-ui.css). */
export function elementStyle(name: string, css: string): ElementStyle {
  const style = { name, css };
  styles.push(style);
  return style;
}

/** uiStylesheet returns every element's CSS, as dist/tabrelay-ui.css holds it. */
export function uiStylesheet(): string {
  return styles.map((s) => `/* <tabrelay-${s.name}> */\n${s.css.trim()}\n`).join("\n");
}

/**
 * setStyleNonce gives the <style> elements of the fallback below the
 * page's CSP nonce (style-src 'nonce-…'). Browsers with constructable
 * stylesheets never need it.
 */
export function setStyleNonce(nonce: string | undefined): void {
  page[STYLE_NONCE] = nonce;
}

/**
 * adoptStyle gives the root el is in (the document, or a shadow root) the
 * element's stylesheet, once. It is a constructable stylesheet in its
 * adoptedStyleSheets, which a Content-Security-Policy without
 * 'unsafe-inline' does not block, unlike a <style> element (issue 26).
 * Where the browser has none, a <style> in the document's head (with the
 * nonce of setStyleNonce) or the shadow root. The rules are in :where(),
 * so the app's own rules win.
 */
export function adoptStyle(el: Element, style: ElementStyle): void {
  if (typeof document === "undefined") return;
  const node = el.getRootNode?.();
  const root: Document | ShadowRoot = typeof ShadowRoot !== "undefined" && node instanceof ShadowRoot ? node : document;
  if ("adoptedStyleSheets" in root && typeof CSSStyleSheet === "function" && "replaceSync" in CSSStyleSheet.prototype) {
    let sheet = sheets.get(style);
    if (!sheet) {
      sheet = new CSSStyleSheet();
      sheet.replaceSync(style.css);
      sheets.set(style, sheet);
    }
    if (!root.adoptedStyleSheets.includes(sheet)) root.adoptedStyleSheets = [...root.adoptedStyleSheets, sheet];
    return;
  }
  const parent = root === document ? document.head : root;
  if (parent.querySelector(`style[data-tabrelay="${style.name}"]`)) return;
  const element = make("style", { "data-tabrelay": style.name }, style.css);
  const nonce = page[STYLE_NONCE];
  if (nonce) element.nonce = nonce;
  parent.append(element);
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

/** The focus ring, shared by the elements. */
export const FOCUS_CSS = ":focus-visible{outline:2px solid var(--tabrelay-focus,var(--tabrelay-accent,#1a5fd0));outline-offset:2px}";

/** The buttons' look, shared by the elements (the focus ring with it). */
export const BUTTON_CSS = `button{font:inherit;border-radius:var(--tabrelay-radius,6px);border:1px solid var(--tabrelay-border,#8886);padding:.3em .9em;cursor:pointer;background:var(--tabrelay-button-bg,transparent);color:inherit}
${FOCUS_CSS}`;
