// <tabrelay-connect>: the Connect panel (docs/tab-protocol.md §8). The
// person types the connect code the agent's waiting page shows, or the
// page's link brings it in the #tabrelay-connect= fragment (read once, at
// load; looked up only when the person presses Continue); the panel shows
// who asks (connect-info), lets them choose what it may use, and approves
// or declines. Whoever holds the waiting page gets the connection, so a
// link's code is approved through the relay's confirm window, which
// proves this browser opened that page; a typed code (perhaps from
// another device) is approved only after the panel said it cannot tell
// who gets it, showed where the request started, and asked again. It
// renders into its light DOM, builds every node with textContent (nothing
// from outside becomes HTML), and takes its colours from CSS custom
// properties.

import type { AppDeclaration, ConnectInfo, ConnectionInfo, ScopeEntry } from "../index.js";
import { takeConnectCode } from "../requests.js";
import { adoptStyle, Base, button, elementStyle, FOCUS_CSS, make as h, uid } from "../dom/elements.js";
import { follow, unfollow } from "../chat-messages.js";
import { messages } from "./messages.js";
import { errorWords, ScopeModel, typedWords, whoAsks } from "./connect-model.js";
import { scopePanel } from "./scope-panel.js";

/** The part of a TabClient the panel uses: any object with these methods will do. */
export interface ConnectClient {
  connectInfo(code: string): Promise<ConnectInfo>;
  approve(code: string, scope: readonly ScopeEntry[]): Promise<ConnectionInfo>;
  /** approveLink approves a link's code; without it, a link's code is approved as a typed one. */
  approveLink?(code: string, scope: readonly ScopeEntry[]): Promise<string>;
  decline(code: string): Promise<void>;
  forget?(connection: string): Promise<void>;
  readonly app?: AppDeclaration;
}

/** How often the panel asks where a link approval stands while its window confirms it. */
export const CONFIRM_POLL_MS = 1500;
const CONFIRM_WINDOW = "tabrelay-confirm";
const CONFIRM_FEATURES = "popup,width=520,height=420";

/** The errors after which the panel asks again where a link approval stands. */
const WAIT_AGAIN = ["unavailable", "lost", "no-answer", "not-connected", "limited"];

/** The fragment is the page's load's: read once, by the first panel. */
let fragmentRead = false;

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
:where(tabrelay-connect) ${FOCUS_CSS}
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
  /** The code the approval link brought, until the person changes the input. */
  private linkCode = "";
  private info: ConnectInfo | undefined;
  private model: ScopeModel | undefined;
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
  private note!: HTMLElement;
  private provenance!: HTMLElement;
  private second!: HTMLElement;
  private yesButton!: HTMLButtonElement;
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
    follow(this, () => this.relabel());
    if (fragmentRead) return;
    fragmentRead = true;
    const code = takeConnectCode();
    if (!code) return;
    // Shown, not looked up: a code nobody asked for spends nothing.
    this.input.value = this.linkCode = code;
    this.result.replaceChildren(h("p", {}, messages().connect.linkBrought));
  }

  disconnectedCallback(): void {
    unfollow(this);
  }

  /** relabel draws the panel again in the table's language, with the code typed and who asks, if shown. */
  private relabel(): void {
    const code = this.input.value, asking = !this.ask.hidden;
    this.build();
    this.input.value = code;
    if (asking && this.info) {
      this.render(this.info, this.model);
      this.ask.hidden = false;
    }
  }

  /** show looks up a code as if the person had typed it. */
  show(code: string): void {
    if (!this.built) this.build();
    this.input.value = code;
    void this.lookUp();
  }

  /** via is how the code being decided reached the panel. */
  private via(): "link" | "typed" {
    return this.linkCode !== "" && this.code === this.linkCode && this.clientValue?.approveLink ? "link" : "typed";
  }

  private build(): void {
    this.built = true;
    adoptStyle(this, SHEET);
    const m = messages().connect;
    const inputId = this.uid + "-code", hintId = this.uid + "-hint", headId = this.uid + "-head";
    this.input = h("input", {
      id: inputId, name: "code", type: "text", autocomplete: "off", spellcheck: "false", autocapitalize: "characters",
      inputmode: "text", placeholder: m.codePlaceholder, "aria-describedby": hintId, "data-part": "code",
    });
    this.lookup = h("button", { type: "submit", "data-part": "lookup" }, m.lookUp);
    const codeForm = h("form", { "data-part": "code-form" },
      h("label", { for: inputId }, m.codeLabel), this.input, this.lookup,
      h("span", { id: hintId, class: "tr-note" }, m.codeHint));
    codeForm.addEventListener("submit", (ev) => {
      ev.preventDefault();
      void this.lookUp();
    });
    this.alert = h("div", { role: "alert", "data-part": "error", tabindex: "-1" });
    this.heading = h("h2", { id: headId, tabindex: "-1" }, m.heading);
    this.who = h("p", { "data-part": "client" });
    this.identity = h("p", { "data-part": "identity" });
    this.redirect = h("p", { "data-part": "redirect" });
    this.expiry = h("p", { "data-part": "expiry", class: "tr-note" });
    this.note = h("p", { "data-part": "warning" });
    this.provenance = h("p", { "data-part": "provenance" });
    this.picker = h("fieldset", { "data-part": "scope" });
    this.approveButton = h("button", { type: "submit", "data-part": "approve" }, m.approve);
    this.declineButton = button({ "data-part": "decline" }, () => void this.decide(false), m.decline);
    const decideForm = h("form", { "data-part": "decide-form" }, this.picker, this.approveButton, this.declineButton);
    decideForm.addEventListener("submit", (ev) => {
      ev.preventDefault();
      void this.decide(true);
    });
    // The second question of a typed code.
    this.yesButton = button({ "data-part": "approve-typed" }, () => void this.decide(true, true), m.yes);
    const back = button({ "data-part": "back" }, () => this.askSecond(false), m.back);
    this.second = h("div", { "data-part": "second", role: "group", hidden: true }, h("p", {}), this.yesButton, back);
    this.ask = h("section", { "aria-labelledby": headId, "data-part": "ask", hidden: true },
      this.heading, this.who, this.identity, this.redirect, this.note, this.provenance, this.expiry, decideForm, this.second);
    this.result = h("div", { role: "status", "data-part": "result", tabindex: "-1" });
    this.replaceChildren(codeForm, this.alert, this.ask, this.result);
  }

  private fail(err: unknown): void {
    this.alert.textContent = errorWords(err);
  }

  private busy(on: boolean): void {
    for (const b of [this.lookup, this.approveButton, this.declineButton, this.yesButton]) b.disabled = on;
    this.setAttribute("aria-busy", String(on));
  }

  private async lookUp(): Promise<void> {
    const code = this.input.value.trim();
    const client = this.clientValue;
    this.alert.textContent = "";
    this.result.replaceChildren();
    if (!code) {
      this.alert.textContent = messages().connect.typeCode;
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
      this.info = info;
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

  /** render shows who asks and the scope picker, ticked as model is (a new one: as the host asked). */
  private render(info: ConnectInfo, kept?: ScopeModel): void {
    const words = whoAsks(info, Date.now());
    this.who.textContent = words.name;
    this.identity.textContent = words.identity;
    this.redirect.textContent = words.redirect;
    this.expiry.textContent = words.expiry;
    const typed = this.via() === "typed";
    const tw = typedWords(info);
    this.note.textContent = typed ? tw.warning : messages().connect.linkNote;
    this.provenance.textContent = typed ? tw.provenance : "";
    this.provenance.hidden = !typed;
    this.askSecond(false);
    const app = this.app;
    const model = (this.model = kept ?? new ScopeModel(app ?? { tools: [] }, info.requestedScope, true));
    const panel = scopePanel(model, { descriptions: true, onChange: () => {} });
    this.picker.replaceChildren(h("legend", {}, messages().connect.scopeLegend(app?.app.title)), ...panel.rows);
  }

  /** askSecond shows (or hides) the second question of a typed code. */
  private askSecond(on: boolean): void {
    this.second.hidden = !on;
    this.approveButton.hidden = this.declineButton.hidden = on;
    if (!on) return;
    const p = this.second.querySelector("p");
    if (p && this.info) p.textContent = typedWords(this.info).question;
    this.yesButton.focus();
  }

  /** decide approves (sure: the person answered the typed code's second question) or declines. */
  private async decide(approve: boolean, sure = false): Promise<void> {
    const client = this.clientValue, model = this.model, code = this.code;
    if (!client || !model || !code) return;
    this.alert.textContent = "";
    const scope = model.scope();
    if (approve && scope.length === 0) {
      this.alert.textContent = messages().connect.chooseOrDecline;
      this.picker.querySelector("input")?.focus();
      return;
    }
    const link = approve && this.via() === "link";
    if (approve && !link && !sure) return this.askSecond(true);
    // The relay's window opens now, in the click: later, a popup blocker would stop it.
    const win = link ? window.open("", CONFIRM_WINDOW, CONFIRM_FEATURES) : null;
    const seq = ++this.seq;
    this.busy(true);
    try {
      if (link) {
        await this.confirmLink(client, code, scope, win, seq);
      } else if (approve) {
        const conn = await client.approve(code, scope);
        this.connected(conn);
      } else {
        await client.decline(code);
        this.done(messages().connect.declined);
        this.emit("tabrelay-declined", undefined);
      }
    } catch (err) {
      win?.close();
      this.fail(err);
      this.alert.focus();
    } finally {
      if (seq === this.seq) this.busy(false);
    }
  }

  private connected(conn: ConnectionInfo): void {
    this.done(messages().connect.connected(conn.client, conn.host), conn);
    this.emit("tabrelay-connected", conn);
  }

  /**
   * confirmLink approves a link's code and sends win (opened in the click)
   * to the relay's confirm page, then asks where the request stands until
   * the page decided it: connected, or declined because this browser did
   * not open the waiting page.
   */
  private async confirmLink(client: ConnectClient, code: string, scope: ScopeEntry[], win: Window | null, seq: number): Promise<void> {
    const confirm = await client.approveLink!(code, scope);
    if (!confirm.startsWith("http")) throw new Error(messages().connect.tooOld);
    let opened = false;
    try {
      if (win && !win.closed) {
        win.location.href = confirm;
        opened = true;
      }
    } catch {
      // A window this page may no longer steer: the button opens another.
    }
    this.ask.hidden = true;
    this.code = this.linkCode = this.input.value = "";
    const m = messages().connect;
    const again = button({ "data-part": "open-confirm" }, () => window.open(confirm, CONFIRM_WINDOW, CONFIRM_FEATURES), m.openWindow);
    const line = h("p", {}, opened ? m.waiting : m.blocked);
    this.result.replaceChildren(line, again);
    this.result.focus();
    this.busy(false); // the person may look up another code meanwhile: that ends the wait
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, CONFIRM_POLL_MS));
      if (seq !== this.seq) return; // the person moved on to another code
      let info: ConnectInfo;
      try {
        info = await client.connectInfo(code);
      } catch (err) {
        // The relay away for a moment: ask again. Anything else (the request
        // is gone): it is over, and asking again would count wrong codes.
        if (WAIT_AGAIN.includes(String((err as { code?: unknown }).code))) continue;
        return this.outcome(m.linkExpired, true);
      }
      if (info.state === "confirming" || info.state === "pending") continue;
      if (info.state === "approved" && info.connection) return this.connected(info.connection);
      if (info.state === "approved") return this.outcome(m.connected(info.client, ""));
      if (info.state === "declined") {
        this.outcome(info.reason === "other-browser" ? m.otherBrowser : m.linkDeclined, true);
        return this.emit("tabrelay-declined", undefined);
      }
      return this.outcome(m.linkExpired, true);
    }
  }

  /** outcome ends a link approval with sentence; alert: read out as an alert. */
  private outcome(sentence: string, alert = false): void {
    this.result.replaceChildren();
    if (alert) {
      this.alert.textContent = sentence;
      this.alert.focus();
    } else {
      this.done(sentence);
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
      const undo = button({ "data-part": "undo" }, async () => {
        undo.disabled = true;
        try {
          await client.forget!(conn.id);
          this.result.replaceChildren(h("p", {}, messages().connect.disconnected(conn.client)));
          this.emit("tabrelay-forgotten", conn);
        } catch (err) {
          undo.disabled = false;
          this.fail(err);
        }
        this.result.focus();
      }, messages().connect.undo);
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
