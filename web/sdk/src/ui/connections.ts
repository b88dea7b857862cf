// <tabrelay-connections>: the Connections panel (docs/tab-protocol.md §8
// "The Connections panel"). It lists the browser's connections — client,
// host, a short id, created (to the second), last used, what each may use,
// a host's sub-agents' connections in a list under the one they were
// derived from — lets the person change a connection's scope (the Connect
// panel's ScopeModel) or forget it (after a second word), and follows the relay's pushes, so an open panel never
// goes stale. Light DOM, text only (nothing from the relay becomes HTML),
// themed by the --tabrelay-* custom properties. ConnectionsPanel
// (connections-model.ts) holds the logic.

import type { AppDeclaration } from "../index.js";
import { ConnectionsPanel, type ConnectionRow, type ConnectionsClient } from "./connections-model.js";
import { adoptStyle, Base, button, define, elementStyle, FOCUS_CSS, make, refocus, uid } from "../dom/elements.js";
import { follow, unfollow } from "../chat-messages.js";
import { messages } from "./messages.js";
import { scopePanel } from "./scope-panel.js";

const T = ":where(tabrelay-connections)";
const STYLE = `${T}{display:block;font:var(--tabrelay-font,inherit);color:var(--tabrelay-fg,inherit);background:var(--tabrelay-bg,transparent);
 padding:var(--tabrelay-padding,0);border-radius:var(--tabrelay-radius,6px)}
${T} ul{list-style:none;margin:0;padding:0;display:grid;gap:var(--tabrelay-gap,.5em)}
${T} li{border:1px solid var(--tabrelay-border,#8886);border-radius:var(--tabrelay-radius,6px);padding:var(--tabrelay-gap,.5em)}
${T} h3{margin:0 0 .25em;font-size:1em}
${T} dl{display:grid;grid-template-columns:auto 1fr;gap:.1em var(--tabrelay-gap,.5em);margin:0 0 var(--tabrelay-gap,.5em)}
${T} dt{color:var(--tabrelay-muted,inherit);opacity:.8}
${T} dd{margin:0}
${T} [data-part=derived]{margin-top:var(--tabrelay-gap,.5em);padding-inline-start:1em}
${T} fieldset{border:1px solid var(--tabrelay-border,#8886);border-radius:var(--tabrelay-radius,6px);margin:0 0 var(--tabrelay-gap,.5em)}
${T} button{font:inherit;border-radius:var(--tabrelay-radius,6px);border:1px solid var(--tabrelay-border,#8886);padding:.3em .9em;cursor:pointer;margin-inline-end:var(--tabrelay-gap,.5em)}
${T} [data-part=save],${T} [data-part=confirm-forget]{background:var(--tabrelay-accent,#1a5fd0);color:var(--tabrelay-accent-fg,#fff)}
${T} [role=alert]:not(:empty){color:var(--tabrelay-error,#b00020);margin:var(--tabrelay-gap,.5em) 0}
${T} .tr-note{color:var(--tabrelay-muted,inherit);opacity:.8;font-size:.9em}
${T} ${FOCUS_CSS}
${T} [hidden]{display:none}`;
const SHEET = elementStyle("connections", STYLE);

/**
 * TabrelayConnections is the element: set `client` (a TabClient) and `app`
 * (the defineApp declaration: the tools' titles and the scope picker).
 * `panel` is its ConnectionsPanel. It dispatches `tabrelay-forgotten` and
 * `tabrelay-scope-changed` (detail: the connection), bubbling.
 */
export class TabrelayConnections extends Base {
  private clientValue: ConnectionsClient | undefined;
  private appValue: AppDeclaration | undefined;
  private model: ConnectionsPanel | undefined;
  private unsubscribe: (() => void) | undefined;
  private parts: { heading: HTMLElement; notice: HTMLElement; alert: HTMLElement; note: HTMLElement; list: HTMLElement } | undefined;
  private focusKey = "";
  private readonly uidBase = uid("connections");

  get client(): ConnectionsClient | undefined {
    return this.clientValue;
  }
  set client(c: ConnectionsClient | undefined) {
    this.clientValue = c;
    this.restart();
  }

  get app(): AppDeclaration | undefined {
    return this.appValue;
  }
  set app(a: AppDeclaration | undefined) {
    this.appValue = a;
    this.restart();
  }

  /** The headless panel behind the element (undefined without a client). */
  get panel(): ConnectionsPanel | undefined {
    return this.model;
  }

  connectedCallback(): void {
    adoptStyle(this, SHEET);
    follow(this, () => {
      if (this.model) this.model.notice = this.model.alert = ""; // said in the language before
      this.build();
      this.render();
    });
    if (!this.parts) this.build();
    this.restart();
  }

  disconnectedCallback(): void {
    unfollow(this);
    this.stopFollowing();
  }

  private build(): void {
    const headId = this.uidBase + "-head";
    const m = messages().connections;
    const refresh = button({ "data-part": "refresh" }, () => void this.model?.refresh(), m.refresh);
    const p = (this.parts = {
      heading: make("h2", { id: headId, tabindex: "-1" }, m.heading),
      notice: make("p", { role: "status", "data-part": "notice" }),
      alert: make("div", { role: "alert", "data-part": "error" }),
      note: make("p", { "data-part": "note", class: "tr-note" }),
      list: make("ul", { "data-part": "list", "aria-labelledby": headId }),
    });
    this.replaceChildren(make("section", { "aria-labelledby": headId }, p.heading, p.notice, p.alert, p.note, p.list, refresh));
  }

  private stopFollowing(): void {
    this.unsubscribe?.();
    this.model?.close();
    this.unsubscribe = this.model = undefined;
  }

  private restart(): void {
    this.stopFollowing();
    const c = this.clientValue;
    if (!c || !this.isConnected) return this.render();
    const model = (this.model = new ConnectionsPanel(c, this.appValue));
    this.unsubscribe = model.onChange(() => this.render());
    model.open();
    this.render();
  }

  private render(): void {
    const p = this.parts, model = this.model;
    if (!p) return;
    const active = document.activeElement as HTMLElement | null;
    const key = this.focusKey || (this.contains(active) ? active?.dataset["key"] ?? "" : "");
    this.focusKey = "";
    p.notice.textContent = model?.notice ?? "";
    p.alert.textContent = model?.alert ?? "";
    const m = messages().connections;
    p.note.textContent = !model || !model.list
      ? m.loading
      : model.list.length === 0 ? m.none(this.appValue?.app.title) : model.stale ? m.stale : "";
    p.note.hidden = !p.note.textContent;
    p.list.replaceChildren(...this.tree(model));
    if (key === "heading") p.heading.focus();
    else if (key) refocus(this, key);
  }

  /** tree is the rows as list items, each derived connection in a list under its parent's item. */
  private tree(model: ConnectionsPanel | undefined): HTMLElement[] {
    const top: HTMLElement[] = [];
    const items = new Map<string, { li: HTMLElement; who: string; kids?: HTMLElement }>();
    for (const r of model?.rows ?? []) {
      const li = this.row(r, model!);
      items.set(r.id, { li, who: r.who });
      const parent = r.parentId ? items.get(r.parentId) : undefined;
      if (!parent) {
        top.push(li);
        continue;
      }
      if (!parent.kids) {
        parent.kids = make("ul", { "data-part": "derived", "aria-label": messages().connections.subAgents(parent.who) });
        parent.li.append(parent.kids);
      }
      parent.kids.append(li);
    }
    return top;
  }

  private row(r: ConnectionRow, model: ConnectionsPanel): HTMLElement {
    const m = messages().connections, title = this.appValue?.app.title;
    const headId = `${this.uidBase}-${r.id}`;
    const press = (part: string, text: string, label: string, act: () => void, attrs: Record<string, string> = {}) => {
      const b = button({ "data-part": part, "data-key": `${r.id}:${part}`, ...(label ? { "aria-label": label } : {}), ...attrs }, act, text);
      b.disabled = r.busy;
      return b;
    };
    const term = (dt: string, dd: string, part: string) => [make("dt", {}, dt), make("dd", { "data-part": part }, dd)];
    const li = make("li", { "data-connection": r.id, ...(r.busy ? { "aria-busy": "true" } : {}) },
      make("h3", { id: headId, "data-part": "client" }, r.derivedFrom ? m.subAgent(r.name) : r.name),
      make("dl", {}, ...term(m.host, r.host, "host"),
        ...(r.derivedFrom ? term(m.madeBy, m.madeFor(r.derivedFrom), "derived-from") : []),
        ...term(m.id, r.shortId, "id"), ...term(m.created, r.created, "created"),
        ...term(m.lastUsed, r.lastUsed, "last-used"), ...term(m.mayUse, r.scope, "scope")));
    if (r.mode === "view") {
      li.append(
        ...(this.appValue ? [press("edit", m.edit, m.editFor(r.who), () => {
          this.focusKey = `${r.id}:tool:0`;
          model.edit(r.id);
        })] : []),
        press("forget", m.forget, m.forgetFor(r.who), () => {
          this.focusKey = `${r.id}:keep`;
          model.askForget(r.id);
        }));
    } else if (r.mode === "forget") {
      const qId = headId + "-q";
      const box = make("div", { role: "group", "aria-labelledby": qId, "data-part": "forget-question" },
        make("p", { id: qId }, m.forgetQuestion(r.who, title)),
        press("confirm-forget", m.forgetFor(r.name), "", () => void this.forget(r.id, model)),
        press("keep", m.keep, m.keepFor(r.who), () => this.back(r.id, "forget", model)));
      box.addEventListener("keydown", (ev) => ev.key === "Escape" && this.back(r.id, "forget", model));
      li.append(box);
    } else if (r.picker) {
      li.append(this.picker(r, model, press));
    }
    return li;
  }

  private picker(r: ConnectionRow, model: ConnectionsPanel, press: (part: string, text: string, label: string, act: () => void) => HTMLButtonElement): HTMLElement {
    const picker = r.picker!;
    const m = messages();
    const panel = scopePanel(picker, { keyPrefix: `${r.id}:tool:`, disabled: r.busy, onChange: () => this.render() });
    const rows: Node[] = [make("legend", {}, m.connections.scopeLegend(r.who, this.appValue?.app.title)), ...panel.rows];
    const form = make("form", { "data-part": "scope-form" }, make("fieldset", { "data-part": "scope" }, ...rows),
      make("p", { class: "tr-note" }, m.connections.emptyScope));
    const save = press("save", m.connections.save, m.connections.saveFor(r.who), () => {});
    save.type = "submit";
    form.append(save, press("cancel", m.connections.cancel, m.connections.cancelFor(r.who), () => this.back(r.id, "edit", model)));
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const conn = r.connection;
      this.focusKey = `${r.id}:save`;
      if (await model.save(r.id)) {
        this.focusKey = `${r.id}:edit`;
        this.render();
        this.emit("tabrelay-scope-changed", model.list?.find((c) => c.id === conn.id) ?? conn);
      } else {
        this.focusKey = `${r.id}:save`;
        this.render();
      }
    });
    form.addEventListener("keydown", (ev) => ev.key === "Escape" && this.back(r.id, "edit", model));
    return form;
  }

  private back(id: string, from: string, model: ConnectionsPanel): void {
    this.focusKey = `${id}:${from}`;
    model.cancel(id);
  }

  private async forget(id: string, model: ConnectionsPanel): Promise<void> {
    const conn = model.list?.find((c) => c.id === id);
    this.focusKey = `${id}:confirm-forget`;
    const done = await model.forget(id);
    this.focusKey = done ? "heading" : `${id}:confirm-forget`; // done: its row is gone
    this.render();
    if (done) this.emit("tabrelay-forgotten", conn);
  }

  private emit(type: string, detail: unknown): void {
    this.dispatchEvent(new CustomEvent(type, { detail, bubbles: true }));
  }
}

/** defineConnectionsElement registers the element (as tabrelay-connections unless named); importing the UI module does it already. */
export function defineConnectionsElement(name = "tabrelay-connections"): void {
  define(name, class extends TabrelayConnections {});
}
