// <tabrelay-chat>: the chat bar (seed 000 "The chat bar"). Set its `chat`
// (a Chat). The provider and model pickers, the key field (emptied once the
// key is kept: a key never stays in the DOM), the conversation as text
// (nothing from a model, a tool or the person becomes HTML), the line of
// what left the browser under each turn, the tokens, a question's choices
// as buttons above the message field, Send, Stop and Export. Enter sends,
// Shift+Enter starts a new line. Every sentence is the messages table's
// (chat), and the element draws its words again after setMessages.

import { button, BUTTON_CSS, define, elementStyle, make, Showing, uid, type ElementStyle } from "../dom/elements.js";
import { noteText, type Entry } from "./conversation.js";
import { chatWords, type ChatMessages } from "../chat-messages.js";
import type { Chat } from "./session.js";

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

export class TabrelayChat extends Showing<Chat> {
  protected readonly sheet: ElementStyle = SHEET;
  private built = false;
  private readonly ids = { log: uid("chat-log"), key: uid("chat-key") };
  private el!: {
    provider: HTMLSelectElement; model: HTMLSelectElement; load: HTMLButtonElement; key: HTMLInputElement; remember: HTMLInputElement;
    saveKey: HTMLButtonElement; forget: HTMLButtonElement; keyState: HTMLElement; log: HTMLOListElement; status: HTMLElement;
    tray: HTMLElement; message: HTMLTextAreaElement; send: HTMLButtonElement; stop: HTMLButtonElement; exportButton: HTMLButtonElement;
    problem: HTMLElement; instructions: HTMLTextAreaElement; keyLabel: HTMLLabelElement; rememberLabel: HTMLElement; summary: HTMLElement;
  };

  /** The chat it shows and drives. */
  get chat(): Chat | undefined {
    return this.source;
  }

  set chat(c: Chat | undefined) {
    this.source = c;
  }

  override connectedCallback(): void {
    if (!this.built) this.build();
    super.connectedCallback();
  }

  protected override relabel(): void {
    this.words();
    this.draw();
  }

  private build(): void {
    this.built = true;
    const action = (name: string, act: () => void) => button({ "data-action": name }, act);
    const el = {
      provider: make("select"),
      model: make("select"),
      load: action("list-models", () => void this.loadModels()),
      key: make("input", { id: this.ids.key, type: "password", autocomplete: "off", spellcheck: "false" }),
      remember: make("input", { type: "checkbox" }),
      saveKey: action("keep-key", () => this.saveKey()),
      forget: action("forget-key", () => this.source?.forgetKey()),
      keyState: make("small"),
      log: make("ol", { id: this.ids.log, role: "log", "aria-live": "polite" }),
      status: make("small", { role: "status" }),
      tray: make("div", { role: "group", class: "tabrelay-row" }),
      message: make("textarea", { "data-part": "message", rows: "2" }),
      send: action("send", () => this.sendText(this.el.message.value, true)),
      stop: action("stop", () => this.source?.stop()),
      exportButton: action("export", () => this.exportConversation()),
      problem: make("p", { role: "alert" }),
      instructions: make("textarea", { "data-part": "instructions", rows: "2" }),
      keyLabel: make("label", { for: this.ids.key }),
      rememberLabel: make("span"),
      summary: make("summary"),
    };
    this.el = el;
    el.provider.addEventListener("change", () => this.source?.setProvider(el.provider.value));
    el.model.addEventListener("change", () => this.source?.setModel(el.model.value));
    // Told to the model with the person's next message (Chat's context).
    el.instructions.addEventListener("input", () => this.source && (this.source.instructions = el.instructions.value));
    el.key.addEventListener("keydown", (e) => e.key === "Enter" && (e.preventDefault(), this.saveKey()));
    el.message.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        this.sendText(el.message.value, true);
      }
    });
    this.append(
      make("div", { class: "tabrelay-row" }, el.provider, el.model, el.load),
      make("div", { class: "tabrelay-row" }, el.keyLabel, el.key, make("label", {}, el.remember, " ", el.rememberLabel), el.saveKey, el.forget, el.keyState),
      make("details", {}, el.summary, el.instructions),
      el.log, el.status, el.problem, el.tray, el.message,
      make("div", { class: "tabrelay-row" }, el.send, el.stop, el.exportButton),
    );
    this.words();
  }

  /** words sets the element's own labels in the table's language. */
  private words(): void {
    const w = chatWords(), el = this.el;
    const label = (e: Element, text: string) => e.setAttribute("aria-label", text);
    label(el.provider, w.provider);
    label(el.model, w.model);
    label(el.log, w.conversation);
    label(el.tray, w.choices);
    label(el.message, w.message);
    label(el.instructions, w.instructionsLabel);
    el.keyLabel.textContent = w.apiKey;
    el.rememberLabel.textContent = w.remember;
    el.summary.textContent = w.instructions;
    el.load.textContent = w.listModels;
    el.saveKey.textContent = w.keepKey;
    el.forget.textContent = w.forgetKey;
    el.send.textContent = w.send;
    el.stop.textContent = w.stop;
    el.exportButton.textContent = w.export;
  }

  private saveKey(): void {
    const key = this.el.key.value;
    // The key leaves the DOM as soon as it is kept.
    this.el.key.value = "";
    if (!key.trim() || !this.source) return;
    this.source.setKey(key, this.el.remember.checked);
    void this.loadModels();
  }

  private async loadModels(): Promise<void> {
    if (!this.source) return;
    this.say("");
    this.say(await this.source.loadModels());
  }

  /** sendText sends text as the person's message; fromField: it was typed there (else the draft stays). */
  private sendText(text: string, fromField: boolean): void {
    const chat = this.source;
    if (!chat || !text.trim() || chat.state === "running") return;
    if (!chat.hasKey) return this.say(chatWords().enterKey(chat.provider.name));
    if (!chat.model) return this.say(chatWords().pickModel);
    this.say("");
    if (fromField) this.el.message.value = "";
    void chat.send(text.trim());
  }

  private say(text: string): void {
    this.el.problem.textContent = text;
  }

  private exportConversation(): void {
    const chat = this.source;
    if (!chat) return;
    const url = URL.createObjectURL(new Blob([chat.exportMarkdown()], { type: "text/markdown" }));
    const a = make("a", { href: url, download: "conversation.md" });
    a.click();
    setTimeout(() => URL.revokeObjectURL(url), 0);
  }

  protected draw(): void {
    if (!this.built) return;
    const chat = this.source, el = this.el;
    // The field shows the chat's instructions (typing sets them: the same text, the caret stays).
    const instructions = chat?.instructions ?? "";
    if (el.instructions.value !== instructions) el.instructions.value = instructions;
    const running = chat?.state === "running";
    el.provider.replaceChildren(...(chat?.providers ?? []).map((p) => make("option", { value: p.id, selected: p === chat?.provider }, p.name)));
    el.model.replaceChildren(...(chat?.models ?? []).map((m) => make("option", { value: m.id, selected: m.id === chat?.model }, m.name)));
    el.model.disabled = !chat?.models.length;
    const keyed = chat?.hasKey === true;
    const keyless = chat?.provider.origin === "null";
    el.key.hidden = el.saveKey.hidden = el.remember.parentElement!.hidden = keyless || keyed;
    el.keyLabel.hidden = keyless || keyed;
    el.forget.hidden = keyless || !keyed;
    const w = chatWords();
    el.keyState.textContent = keyless || !keyed ? "" : w.keyKept(chat!.keys.remembered(chat!.provider), chat!.provider.origin);
    el.send.disabled = running;
    el.stop.disabled = !running;
    el.provider.disabled = running;
    el.log.setAttribute("aria-busy", String(running));
    el.log.replaceChildren(...(chat ? this.items(chat) : []));
    el.log.scrollTop = el.log.scrollHeight;
    el.status.textContent = chat ? w.tokens(chat.tokens, running) : "";
    const ask = chat?.ask;
    el.tray.replaceChildren(...(ask ? [make("span", {}, ask.question), ...ask.choices.map((c) => button({}, () => this.sendText(c, false), c))] : []));
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
    if (chat.streaming) out.push(make("li", { "data-role": "assistant" }, chatWords().says(chat.provider.name, chat.streaming)));
    return out;
  }
}

function entryItems(e: Entry, provider: string, w: ChatMessages = chatWords()): HTMLLIElement[] {
  switch (e.role) {
    case "user":
      return [make("li", { "data-role": "user" }, w.you(e.text))];
    case "assistant":
      return e.parts.flatMap((p) => p.type === "text"
        ? (p.text ? [make("li", { "data-role": "assistant" }, w.says(provider, p.text))] : [])
        : [make("li", { "data-role": "tool" }, w.calls(provider, p.name))]);
    case "tool":
      return e.results.filter((r) => r.isError).map((r) => make("li", { "data-role": "tool" }, w.failed(r.name)));
    case "note":
      return [make("li", { "data-role": "note" }, noteText(e.note, w))];
  }
}

/** defineChatElement registers <tabrelay-chat>; importing @tabrelay/tab/chat does it in a browser. */
export function defineChatElement(): void {
  define("tabrelay-chat", TabrelayChat);
}
