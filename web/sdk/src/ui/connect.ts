// <tabrelay-connect>: the Connect panel (docs/tab-protocol.md §8). The
// person types the connect code the agent's waiting page shows, or the
// page's link brings it in the #tabrelay-connect= fragment; the panel
// shows who asks (connect-info), lets them choose what it may use, and
// approves or declines. It renders into its light DOM, builds every node
// with textContent (nothing from outside becomes HTML), and takes its
// colours from CSS custom properties.

import type { AppDeclaration, ConnectInfo, ConnectionInfo, ScopeEntry } from "../index.js";
import { takeConnectCode } from "../requests.js";
import { adoptStyle, Base, elementStyle, make as h, uid } from "./controls-dom.js";
import { errorWords, ScopeModel, whoAsks } from "./model.js";

/** The part of a TabClient the panel uses: any object with these methods will do. */
export interface ConnectClient {
  connectInfo(code: string): Promise<ConnectInfo>;
  approve(code: string, scope: readonly ScopeEntry[]): Promise<ConnectionInfo>;
  decline(code: string): Promise<void>;
  forget?(connection: string): Promise<void>;
  readonly app?: AppDeclaration;
}

const STYLE = `
:where(tabrelay-connect){display:block;font:var(--tabrelay-font,inherit);color:var(--tabrelay-fg,inherit);background:var(--tabrelay-bg,transparent);
 padding:var(--tabrelay-padding,0);border-radius:var(--tabrelay-radius,6px)}
:where(tabrelay-connect) form{display:flex;flex-wrap:wrap;gap:var(--tabrelay-gap,.5em);align-items:center;margin:0 0 var(--tabrelay-gap,.5em)}
:where(tabrelay-connect) fieldset{border:1px solid var(--tabrelay-border,#8886);border-radius:var(--tabrelay-radius,6px);margin:0;flex:1 1 100%}
:where(tabrelay-connect) input[name=code]{font-family:var(--tabrelay-mono,ui-monospace,monospace);text-transform:uppercase;letter-spacing:.1em}
:where(tabrelay-connect) button{font:inherit;border-radius:var(--tabrelay-radius,6px);border:1px solid var(--tabrelay-border,#8886);padding:.3em .9em;cursor:pointer}
:where(tabrelay-connect) [data-part=approve]{background:var(--tabrelay-accent,#1a5fd0);color:var(--tabrelay-accent-fg,#fff)}
:where(tabrelay-connect) [role=alert]:not(:empty){color:var(--tabrelay-error,#b00020);margin:var(--tabrelay-gap,.5em) 0}
:where(tabrelay-connect) [data-part=client]{font-weight:600}
:where(tabrelay-connect) .tr-note{color:var(--tabrelay-muted,inherit);opacity:.8;font-size:.9em}
:where(tabrelay-connect) :focus-visible{outline:2px solid var(--tabrelay-focus,var(--tabrelay-accent,#1a5fd0));outline-offset:2px}
:where(tabrelay-connect) [hidden]{display:none}`;
const SHEET = elementStyle("connect", STYLE);

/**
 * TabrelayConnect is the element: set `client` (a TabClient) and, unless
 * the client carries it, `app` (the defineApp declaration). It dispatches
 * `tabrelay-connected` (detail: the connection), `tabrelay-declined` and
 * `tabrelay-forgotten` (detail: the connection), bubbling.
 */
export class TabrelayConnect extends Base {
  private clientValue: ConnectClient | undefined;
  private appValue: AppDeclaration | undefined;
  private built = false;
  private seq = 0;
  private code = "";
  private pendingCode = "";
  private model: ScopeModel | undefined;
  private readonly onHash = () => this.readFragment();
  private readonly uid = uid("connect");
  // The parts, made once.
  private input!: HTMLInputElement;
  private lookup!: HTMLButtonElement;
  private alert!: HTMLElement;
  private ask!: HTMLElement;
  private heading!: HTMLElement;
  private who!: HTMLElement;
  private identity!: HTMLElement;
  private redirect!: HTMLElement;
  private expiry!: HTMLElement;
  private picker!: HTMLFieldSetElement;
  private approveButton!: HTMLButtonElement;
  private declineButton!: HTMLButtonElement;
  private result!: HTMLElement;

  get client(): ConnectClient | undefined {
    return this.clientValue;
  }
  set client(c: ConnectClient | undefined) {
    this.clientValue = c;
    if (c && this.pendingCode) this.show(this.pendingCode);
  }

  get app(): AppDeclaration | undefined {
    return this.appValue ?? this.clientValue?.app;
  }
  set app(a: AppDeclaration | undefined) {
    this.appValue = a;
  }

  connectedCallback(): void {
    if (!this.built) this.build();
    window.addEventListener("hashchange", this.onHash);
    this.readFragment();
  }

  disconnectedCallback(): void {
    window.removeEventListener("hashchange", this.onHash);
  }

  /** show looks up a code as if the person had typed it. */
  show(code: string): void {
    if (!this.built) this.build();
    this.input.value = code;
    void this.lookUp();
  }

  private readFragment(): void {
    const code = takeConnectCode();
    if (code) this.show(code);
  }

  private build(): void {
    this.built = true;
    adoptStyle(this, SHEET);
    const inputId = this.uid + "-code", hintId = this.uid + "-hint", headId = this.uid + "-head";
    this.input = h("input", {
      id: inputId, name: "code", type: "text", autocomplete: "off", spellcheck: "false", autocapitalize: "characters",
      inputmode: "text", placeholder: "XXXX-XXXX", "aria-describedby": hintId, "data-part": "code",
    });
    this.lookup = h("button", { type: "submit", "data-part": "lookup" }, "Continue");
    const codeForm = h("form", { "data-part": "code-form" },
      h("label", { for: inputId }, "Connect code"), this.input, this.lookup,
      h("span", { id: hintId, class: "tr-note" }, "The code the agent's application shows, like KQ7M-2XDP."));
    codeForm.addEventListener("submit", (ev) => {
      ev.preventDefault();
      void this.lookUp();
    });
    this.alert = h("div", { role: "alert", "data-part": "error", tabindex: "-1" });
    this.heading = h("h2", { id: headId, tabindex: "-1" }, "An agent asks to connect");
    this.who = h("p", { "data-part": "client" });
    this.identity = h("p", { "data-part": "identity" });
    this.redirect = h("p", { "data-part": "redirect" });
    this.expiry = h("p", { "data-part": "expiry", class: "tr-note" });
    this.picker = h("fieldset", { "data-part": "scope" });
    this.approveButton = h("button", { type: "submit", "data-part": "approve" }, "Approve");
    this.declineButton = h("button", { type: "button", "data-part": "decline" }, "Decline");
    const decideForm = h("form", { "data-part": "decide-form" }, this.picker, this.approveButton, this.declineButton);
    decideForm.addEventListener("submit", (ev) => {
      ev.preventDefault();
      void this.decide(true);
    });
    this.declineButton.addEventListener("click", () => void this.decide(false));
    this.ask = h("section", { "aria-labelledby": headId, "data-part": "ask", hidden: true },
      this.heading, this.who, this.identity, this.redirect, this.expiry, decideForm);
    this.result = h("div", { role: "status", "data-part": "result", tabindex: "-1" });
    this.replaceChildren(codeForm, this.alert, this.ask, this.result);
  }

  private fail(err: unknown): void {
    this.alert.textContent = errorWords(err);
  }

  private busy(on: boolean): void {
    for (const b of [this.lookup, this.approveButton, this.declineButton]) b.disabled = on;
    this.setAttribute("aria-busy", String(on));
  }

  private async lookUp(): Promise<void> {
    const code = this.input.value.trim();
    const client = this.clientValue;
    this.alert.textContent = "";
    this.result.replaceChildren();
    if (!code) {
      this.alert.textContent = "Type the connect code that the agent's application shows.";
      this.input.focus();
      return;
    }
    if (!client) {
      this.pendingCode = code; // the client comes later: looked up then
      return;
    }
    this.pendingCode = "";
    const seq = ++this.seq;
    this.busy(true);
    try {
      const info = await client.connectInfo(code);
      if (seq !== this.seq) return; // another code was typed meanwhile
      this.code = code;
      this.render(info);
      this.ask.hidden = false;
      this.heading.focus();
    } catch (err) {
      if (seq !== this.seq) return;
      this.ask.hidden = true;
      this.fail(err);
      this.input.focus();
    } finally {
      if (seq === this.seq) this.busy(false);
    }
  }

  private render(info: ConnectInfo): void {
    const words = whoAsks(info, Date.now());
    this.who.textContent = words.name;
    this.identity.textContent = words.identity;
    this.redirect.textContent = words.redirect;
    this.expiry.textContent = words.expiry;
    const app = this.app;
    const model = (this.model = new ScopeModel(app ?? { tools: [] }, info.requestedScope));
    const rows: Node[] = [h("legend", {}, `What it may use in ${app?.app.title ?? "this app"}`)];
    const box = (tool: string, action: string | undefined, label: string, note: string) => {
      const id = uid("box"); // a count: names with "-" in them could collide
      const input = h("input", { type: "checkbox", id, "data-tool": tool, ...(action ? { "data-action": action } : {}) });
      input.checked = model.ticked(tool, action);
      input.addEventListener("change", () => {
        model.set(tool, action, input.checked);
        this.sync();
      });
      const row = h("div", {}, input, h("label", { for: id }, label));
      if (note) row.append(" ", h("span", { class: "tr-note" }, note));
      return row;
    };
    for (const t of model.tools) {
      if (t.actions.length === 0) {
        rows.push(box(t.name, undefined, t.title, t.description));
        continue;
      }
      rows.push(h("fieldset", {}, h("legend", {}, t.title),
        box(t.name, undefined, "Everything, also actions added later", t.description),
        ...t.actions.map((a) => box(t.name, a.name, a.name, a.description))));
    }
    this.picker.replaceChildren(...rows);
    this.sync();
  }

  /** sync shows the model: an action is ticked and fixed while its whole tool is. */
  private sync(): void {
    const model = this.model;
    if (!model) return;
    for (const input of this.picker.querySelectorAll<HTMLInputElement>("input[data-action]")) {
      const tool = input.dataset["tool"] ?? "", action = input.dataset["action"] ?? "";
      input.checked = model.ticked(tool, action);
      input.disabled = model.ticked(tool);
    }
  }

  private async decide(approve: boolean): Promise<void> {
    const client = this.clientValue, model = this.model, code = this.code;
    if (!client || !model || !code) return;
    this.alert.textContent = "";
    const scope = model.scope();
    if (approve && scope.length === 0) {
      this.alert.textContent = "Choose at least one of this app's tools, or decline.";
      this.picker.querySelector("input")?.focus();
      return;
    }
    const seq = ++this.seq;
    this.busy(true);
    try {
      if (approve) {
        const conn = await client.approve(code, scope);
        this.done(`${conn.client || "The agent"} (${conn.host || "unknown host"}) is connected. You can go back to its page.`, conn);
        this.emit("tabrelay-connected", conn);
      } else {
        await client.decline(code);
        this.done("Declined: the agent is not connected.");
        this.emit("tabrelay-declined", undefined);
      }
    } catch (err) {
      this.fail(err);
      this.alert.focus();
    } finally {
      if (seq === this.seq) this.busy(false);
    }
  }

  private done(sentence: string, conn?: ConnectionInfo): void {
    this.ask.hidden = true;
    this.code = "";
    this.input.value = "";
    this.result.replaceChildren(h("p", {}, sentence));
    const client = this.clientValue;
    if (conn && client?.forget) {
      // §8 step 6: offer to undo it, in case it was not who the person thought.
      const undo = h("button", { type: "button", "data-part": "undo" }, "Undo: disconnect it");
      undo.addEventListener("click", async () => {
        undo.disabled = true;
        try {
          await client.forget!(conn.id);
          this.result.replaceChildren(h("p", {}, `${conn.client || "The agent"} is disconnected.`));
          this.emit("tabrelay-forgotten", conn);
        } catch (err) {
          undo.disabled = false;
          this.fail(err);
        }
        this.result.focus();
      });
      this.result.append(undo);
    }
    this.result.focus();
  }

  private emit(type: string, detail: unknown): void {
    this.dispatchEvent(new CustomEvent(type, { detail, bubbles: true }));
  }
}

/** defineConnectElement registers the element (as tabrelay-connect unless named); importing the UI module does it already. */
export function defineConnectElement(name = "tabrelay-connect"): void {
  if (typeof customElements !== "undefined" && !customElements.get(name)) {
    customElements.define(name, class extends TabrelayConnect {});
  }
}
