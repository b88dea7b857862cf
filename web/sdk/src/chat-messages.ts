// The chat's sentences (issue 26's messages table, issue 28): the part
// `chat` of the SDK's Messages, English here (the UI module's `en` holds
// this same object; @tabrelay/tab/ui/de has the German). The chat is a
// module of its own: it reads the table the UI module's setMessages put in
// place through one registry on globalThis, and speaks this English when
// no UI module is loaded.

/** The kinds of failure a chat provider's answer maps to (@tabrelay/tab/chat's FAILURE_KINDS). */
export type FailureKind = "auth" | "permission" | "quota" | "rate" | "busy" | "network" | "unreadable" | "model" | "too-long" | "request";

/** The chat bar's sentences: every text, label and aria-label it shows. */
export interface ChatMessages {
  readonly provider: string;
  readonly model: string;
  readonly listModels: string;
  readonly apiKey: string;
  readonly remember: string;
  readonly keepKey: string;
  readonly forgetKey: string;
  /** Where the key is kept (the browser, or this tab) and the only origin it goes to. */
  readonly keyKept: (inBrowser: boolean, origin: string) => string;
  readonly instructions: string;
  readonly instructionsLabel: string;
  readonly conversation: string;
  readonly message: string;
  readonly choices: string;
  readonly send: string;
  readonly stop: string;
  readonly export: string;
  /** The person's message, the model's words, its call, a failed call. */
  readonly you: (text: string) => string;
  readonly says: (provider: string, text: string) => string;
  readonly calls: (provider: string, tool: string) => string;
  readonly failed: (tool: string) => string;
  /** The status line: the tokens of the conversation, while a turn runs or not. */
  readonly tokens: (n: number, running: boolean) => string;
  readonly enterKey: (provider: string) => string;
  readonly pickModel: string;
  readonly noModels: (provider: string) => string;
  /** The notes under a turn. */
  readonly stopped: string;
  readonly limit: (budget: number) => string;
  readonly summarised: string;
  /** A provider's failure: what happened and what to do; detail is the provider's own words. */
  readonly failure: Readonly<Record<FailureKind, string>>;
  readonly failureDetail: (words: string, detail: string) => string;
  /** What left the browser in a turn. */
  readonly sent: (provider: string, results: number, pictures: number, keptOut: number) => string;
}

const s = (n: number) => (n === 1 ? "" : "s");

export const chatEn: ChatMessages = {
  provider: "Provider",
  model: "Model",
  listModels: "List models",
  apiKey: "API key",
  remember: "Remember in this browser",
  keepKey: "Keep key",
  forgetKey: "Forget key",
  keyKept: (inBrowser, origin) => `Key kept ${inBrowser ? "in this browser" : "for this tab"}; sent only to ${origin}.`,
  instructions: "Your instructions",
  instructionsLabel: "Your instructions to the agent",
  conversation: "Conversation",
  message: "Message",
  choices: "Choices",
  send: "Send",
  stop: "Stop",
  export: "Export",
  you: (text) => `You: ${text}`,
  says: (provider, text) => `${provider}: ${text}`,
  calls: (provider, tool) => `${provider} calls ${tool}`,
  failed: (tool) => `${tool} failed`,
  tokens: (n, running) => `${running ? "Working… " : ""}${n.toLocaleString("en")} tokens in this conversation.`,
  enterKey: (provider) => `Enter your ${provider} API key first.`,
  pickModel: "Pick a model first (List models).",
  noModels: (provider) => `${provider} lists no models for this key.`,
  stopped: "You stopped this turn.",
  limit: (budget) => `This turn reached its budget of ${budget} tokens; send a message to go on.`,
  summarised: "The conversation was summarised to fit the model's window; earlier messages are no longer sent.",
  failure: {
    auth: "The provider refused the key: check it, or enter another.",
    permission: "This key may not use this model: pick another model, or check the key's permissions with the provider.",
    quota: "The key's account has no credit or quota left: add some with the provider, or use another key.",
    rate: "The provider limits how fast this key may send: wait a minute and send again.",
    busy: "The provider is busy or down: wait a minute and send again.",
    network: "The provider could not be reached: check the network, or the provider's base URL.",
    unreadable: "The provider's answer could not be read: send again; if it happens again, check the provider's base URL.",
    model: "The provider does not know this model: pick another.",
    "too-long": "The conversation is too long for this model even summarised: start a new conversation.",
    request: "The provider refused the request: start a new conversation, or pick another model.",
  },
  failureDetail: (words, detail) => `${words} (${detail})`,
  sent: (provider, results, pictures, keptOut) =>
    `Sent to ${provider}: the conversation${results ? `, ${results} tool result${s(results)}` : ""}${pictures ? `, ${pictures} picture${s(pictures)}` : ""}.` +
    (keptOut ? ` Values and pictures were kept out of ${keptOut} result${s(keptOut)} (names and summaries only).` : ""),
};

/**
 * The registry the UI module's messages.ts keeps the table in, shared by the
 * SDK's modules of one page (each bundles its own code): the table now,
 * and what to call after setMessages (follow's redraws).
 */
export interface MessagesRegistry {
  current?: { readonly lang: string; readonly chat: ChatMessages } | undefined;
  readonly redraws: Set<() => void>;
}

/** messagesRegistry returns the page's registry, made by whichever module asks first. */
export function messagesRegistry(): MessagesRegistry {
  const g = globalThis as Record<symbol, MessagesRegistry | undefined>;
  return (g[Symbol.for("tabrelay.messages")] ??= { redraws: new Set() });
}

/** chatWords returns the chat's sentences in the table the page speaks now (English without the UI module). */
export function chatWords(): ChatMessages {
  return messagesRegistry().current?.chat ?? chatEn;
}

/** The elements whose lang attribute is the table's, set by speak. */
const marked = new WeakSet<Element>();

/**
 * speak sets el's lang attribute to the table's language (English without
 * the UI module) where the page around it is in another one, so that
 * screen readers pronounce it right; where they match, it removes the one
 * it set. A lang the app set on the element stays.
 */
export function speak(el: Element): void {
  const lang = messagesRegistry().current?.lang ?? "en";
  if (el.hasAttribute("lang") && !marked.has(el)) return;
  const around = el.parentElement?.closest("[lang]")?.getAttribute("lang") ?? "";
  const primary = (tag: string) => tag.split("-")[0]!.toLowerCase();
  if (primary(around) === primary(lang)) {
    if (marked.delete(el)) el.removeAttribute("lang");
    return;
  }
  el.setAttribute("lang", lang);
  marked.add(el);
}

/** How each element that follows the table draws its words again (follow), for unfollow. */
const following = new WeakMap<Element, () => void>();

/**
 * follow draws el's words again, with redraw, whenever the UI module's
 * setMessages changes the table, until unfollow, and when it follows again
 * after the table changed meanwhile; it also calls speak, now and at each
 * change. The elements of both modules (the UI's and the
 * chat's) follow through the page's one registry.
 */
export function follow(el: Element, redraw: () => void): void {
  unfollow(el);
  const registry = messagesRegistry();
  const again = (): void => void (speak(el), redraw(), drawnIn.set(el, registry.current));
  following.set(el, again);
  registry.redraws.add(again);
  // Back in the page after setMessages changed the table while it was out: its words are the old table's.
  if (drawnIn.has(el) && drawnIn.get(el) !== registry.current) return again();
  speak(el);
  drawnIn.set(el, registry.current);
}

/** The table each following element last drew its words in (undefined: English without the UI module). */
const drawnIn = new WeakMap<Element, MessagesRegistry["current"]>();

/** unfollow stops follow's redraws of el. */
export function unfollow(el: Element): void {
  const again = following.get(el);
  if (again) messagesRegistry().redraws.delete(again);
  following.delete(el);
}
