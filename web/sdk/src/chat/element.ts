// <tabrelay-chat>: the chat bar (seed 000 "The chat bar"). Set its `chat`
// (a Chat). The provider and model pickers, the key field (emptied once the
// key is kept: a key never stays in the DOM), the conversation as text
// (nothing from a model, a tool or the person becomes HTML), the line of
// what left the browser under each turn, the tokens, a question's choices
// as buttons above the message field, Send, Stop and Export. Enter sends,
// Shift+Enter starts a new line.

import { adoptStyle, BUTTON_CSS, define, elementStyle, make, uid } from "../ui/controls-dom.js";
import type { Entry } from "./conversation.js";
import type { Chat } from "./session.js";

/** HTMLElement in a browser, a stand-in in node (as ui/controls-dom.ts's Base; the chat's types name no UI module). */
const ChatBase: typeof HTMLElement = typeof HTMLElement === "undefined" ? (class {} as unknown as typeof HTMLElement) : HTMLElement;
const S = ":where(tabrelay-chat)";
const STYLE = `${S}{display:flex;flex-direction:column;gap:var(--tabrelay-gap,.5em);font:var(--tabrelay-font,inherit);color:var(--tabrelay-fg,inherit)}
${S} ol{list-style:none;margin:0;padding:0;display:grid;gap:.4em;max-height:var(--tabrelay-chat-height,24em);overflow:auto}
${S} li{white-space:pre-wrap;overflow-wrap:anywhere}
${S} [data-role=user]{font-weight:600}
${S} [data-role=note],${S} [data-role=sent],${S} [data-role=tool],${S} small{color:var(--tabrelay-muted,inherit);opacity:.85;font-size:.9em}
${S} .tabrelay-row{display:flex;flex-wrap:wrap;gap:var(--tabrelay-gap,.5em);align-items:center}
${S} textarea{font:inherit;width:100%;box-sizing:border-box;min-height:3em}
${S} ${BUTTON_CSS.replace(/\n/g, `\n${S} `)}`;
const SHEET = elementStyle("chat", STYLE);

export class TabrelayChat extends ChatBase {
  private chatValue: Chat | undefined;
  private unsubscribe: (() => void) | undefined;
  private built = false;
  private readonly ids = { log: uid("chat-log"), key: uid("chat-key") };
  private el!: {
    provider: HTMLSelectElement; model: HTMLSelectElement; load: HTMLButtonElement; key: HTMLInputElement; remember: HTMLInputElement;
    saveKey: HTMLButtonElement; forget: HTMLButtonElement; keyState: HTMLElement; log: HTMLOListElement; status: HTMLElement;
    tray: HTMLElement; message: HTMLTextAreaElement; send: HTMLButtonElement; stop: HTMLButtonElement; exportButton: HTMLButtonElement;
    problem: HTMLElement; instructions: HTMLTextAreaElement;
  };

  get chat(): Chat | undefined {
    return this.chatValue;
  }

  set chat(c: Chat | undefined) {
    this.chatValue = c;
    if (this.isConnected) this.watch();
  }

  connectedCallback(): void {
    adoptStyle(this, SHEET);
    if (!this.built) this.build();
    this.watch();
  }

  disconnectedCallback(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  private build(): void {
    this.built = true;
    const button = (label: string, act: () => void) => {
      const b = make("button", { type: "button", "data-action": label.toLowerCase().replace(/ /g, "-") }, label);
      b.addEventListener("click", act);
      return b;
    };
    const el = {
      provider: make("select", { "aria-label": "Provider" }),
      model: make("select", { "aria-label": "Model" }),
      load: button("List models", () => void this.loadModels()),
      key: make("input", { id: this.ids.key, type: "password", autocomplete: "off", spellcheck: "false" }),
      remember: make("input", { type: "checkbox" }),
      saveKey: button("Keep key", () => this.saveKey()),
      forget: button("Forget key", () => this.chatValue?.forgetKey()),
      keyState: make("small"),
      log: make("ol", { id: this.ids.log, role: "log", "aria-label": "Conversation", "aria-live": "polite" }),
      status: make("small", { role: "status" }),
      tray: make("div", { role: "group", "aria-label": "Choices", class: "tabrelay-row" }),
      message: make("textarea", { "aria-label": "Message", rows: "2" }),
      send: button("Send", () => this.sendText(this.el.message.value, true)),
      stop: button("Stop", () => this.chatValue?.stop()),
      exportButton: button("Export", () => this.exportConversation()),
      problem: make("p", { role: "alert" }),
      instructions: make("textarea", { "aria-label": "Your instructions to the agent", rows: "2" }),
    };
    this.el = el;
    el.provider.addEventListener("change", () => this.chatValue?.setProvider(el.provider.value));
    el.model.addEventListener("change", () => this.chatValue?.setModel(el.model.value));
    // Told to the model with the person's next message (Chat's context).
    el.instructions.addEventListener("input", () => this.chatValue && (this.chatValue.instructions = el.instructions.value));
    el.key.addEventListener("keydown", (e) => e.key === "Enter" && (e.preventDefault(), this.saveKey()));
    el.message.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        this.sendText(el.message.value, true);
      }
    });
    const keyLabel = make("label", { for: this.ids.key }, "API key");
    this.append(
      make("div", { class: "tabrelay-row" }, el.provider, el.model, el.load),
      make("div", { class: "tabrelay-row" }, keyLabel, el.key, make("label", {}, el.remember, " Remember in this browser"), el.saveKey, el.forget, el.keyState),
      make("details", {}, make("summary", {}, "Your instructions"), el.instructions),
      el.log, el.status, el.problem, el.tray, el.message,
      make("div", { class: "tabrelay-row" }, el.send, el.stop, el.exportButton),
    );
  }

  private watch(): void {
    if (this.built) this.el.instructions.value = this.chatValue?.instructions ?? "";
    this.unsubscribe?.();
    this.unsubscribe = this.chatValue?.onChange(() => this.render());
    this.render();
  }

  private saveKey(): void {
    const key = this.el.key.value;
    // The key leaves the DOM as soon as it is kept.
    this.el.key.value = "";
    if (!key.trim() || !this.chatValue) return;
    this.chatValue.setKey(key, this.el.remember.checked);
    void this.loadModels();
  }

  private async loadModels(): Promise<void> {
    if (!this.chatValue) return;
    this.say("");
    this.say(await this.chatValue.loadModels());
  }

  /** sendText sends text as the person's message; fromField: it was typed there (else the draft stays). */
  private sendText(text: string, fromField: boolean): void {
    const chat = this.chatValue;
    if (!chat || !text.trim() || chat.state === "running") return;
    if (!chat.hasKey) return this.say(`Enter your ${chat.provider.name} API key first.`);
    if (!chat.model) return this.say("Pick a model first (List models).");
    this.say("");
    if (fromField) this.el.message.value = "";
    void chat.send(text.trim());
  }

  private say(text: string): void {
    this.el.problem.textContent = text;
  }

  private exportConversation(): void {
    const chat = this.chatValue;
    if (!chat) return;
    const url = URL.createObjectURL(new Blob([chat.exportMarkdown()], { type: "text/markdown" }));
    const a = make("a", { href: url, download: "conversation.md" });
    a.click();
    setTimeout(() => URL.revokeObjectURL(url), 0);
  }

  private render(): void {
    if (!this.built) return;
    const chat = this.chatValue, el = this.el;
    const running = chat?.state === "running";
    el.provider.replaceChildren(...(chat?.providers ?? []).map((p) => make("option", { value: p.id, selected: p === chat?.provider }, p.name)));
    el.model.replaceChildren(...(chat?.models ?? []).map((m) => make("option", { value: m.id, selected: m.id === chat?.model }, m.name)));
    el.model.disabled = !chat?.models.length;
    const keyed = chat?.hasKey === true;
    const keyless = chat?.provider.origin === "null";
    el.key.hidden = el.saveKey.hidden = el.remember.parentElement!.hidden = keyless || keyed;
    el.key.previousElementSibling!.toggleAttribute("hidden", keyless || keyed);
    el.forget.hidden = keyless || !keyed;
    el.keyState.textContent = keyless ? "" : keyed ? `Key kept ${chat!.keys.remembered(chat!.provider) ? "in this browser" : "for this tab"}; sent only to ${chat!.provider.origin}.` : "";
    el.send.disabled = running;
    el.stop.disabled = !running;
    el.provider.disabled = running;
    el.log.setAttribute("aria-busy", String(running));
    el.log.replaceChildren(...(chat ? this.items(chat) : []));
    el.log.scrollTop = el.log.scrollHeight;
    el.status.textContent = chat ? `${running ? "Working… " : ""}${chat.tokens.toLocaleString("en")} tokens in this conversation.` : "";
    const ask = chat?.ask;
    el.tray.replaceChildren(...(ask ? [make("span", {}, ask.question), ...ask.choices.map((c) => {
      const b = make("button", { type: "button" }, c);
      b.addEventListener("click", () => this.sendText(c, false));
      return b;
    })] : []));
    el.tray.hidden = !ask;
  }

  private items(chat: Chat): HTMLLIElement[] {
    const out: HTMLLIElement[] = [];
    const entries = chat.conversation.entries;
    entries.forEach((e, i) => {
      out.push(...entryItems(e, chat.provider.name));
      const next = entries[i + 1];
      if (e.role !== "user" && (!next || next.turn !== e.turn)) {
        const line = chat.sentLine(e.turn);
        if (line) out.push(make("li", { "data-role": "sent" }, line));
      }
    });
    if (chat.streaming) out.push(make("li", { "data-role": "assistant" }, `${chat.provider.name}: ${chat.streaming}`));
    return out;
  }
}

function entryItems(e: Entry, provider: string): HTMLLIElement[] {
  switch (e.role) {
    case "user":
      return [make("li", { "data-role": "user" }, "You: " + e.text)];
    case "assistant":
      return e.parts.flatMap((p) => p.type === "text"
        ? (p.text ? [make("li", { "data-role": "assistant" }, `${provider}: ${p.text}`)] : [])
        : [make("li", { "data-role": "tool" }, `${provider} calls ${p.name}`)]);
    case "tool":
      return e.results.filter((r) => r.isError).map((r) => make("li", { "data-role": "tool" }, `${r.name} failed`));
    case "note":
      return [make("li", { "data-role": "note" }, e.text)];
  }
}

/** defineChatElement registers <tabrelay-chat>; importing @tabrelay/tab/chat does it in a browser. */
export function defineChatElement(): void {
  define("tabrelay-chat", TabrelayChat);
}
