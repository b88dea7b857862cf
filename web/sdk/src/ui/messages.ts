// The person's language (issue 26): every sentence the elements of this
// entry show comes from one table, Messages. English (messages-en.ts) is
// the default; setMessages puts another in place, such as the German of
// @tabrelay/tab/ui/de. The table is typed: a locale declared as Messages
// that lacks an entry does not compile. A sentence with values in it is a
// function of them, so each language orders and inflects them itself
// (counts too: "1 minute", "2 minutes"). What the agent reads — results,
// refusals, the relay's errors — stays English and is not in the table.

import type { PermissionKind, Status, StopReason } from "../index.js";
import { messagesRegistry, type ChatMessages } from "../chat-messages.js";
import { en } from "./messages-en.js";
import type { Mode, Setting } from "./permissions-model.js";

/** The error codes of the relay's and the client's requests the panels put in words (§7 `error`). */
export type ErrorCode =
  | "wrong-code" | "code-used" | "code-expired" | "limited" | "invalid-scope" | "unavailable" | "unsupported" | "not-found"
  | "cross-device-off" | "not-connected" | "lost" | "no-answer";

/** The sentences of one language: every text, label and aria-label the elements show. */
export interface Messages {
  /** The BCP 47 tag of the sentences ("en", "de"): the elements' lang attribute where the page's language differs. */
  readonly lang: string;
  /** A time of day (the connect code's expiry, when a request started). */
  readonly time: (ms: number) => string;
  /** A date and time to the second (a connection's created and last used). */
  readonly dateTime: (ms: number) => string;
  /** The client's status in words (statusWords). */
  readonly status: {
    readonly idle: string;
    readonly connecting: string;
    readonly connected: string;
    /** code: how the last socket ended (1006: it broke); seconds: the wait before the next try (0: now). */
    readonly reconnecting: (seconds: number, code: number) => string;
    readonly stopped: Readonly<Record<StopReason, string>>;
  };
  /** A failed request's sentence per error code (errorWords). */
  readonly errors: Readonly<Record<ErrorCode, string>>;
  /** A failure with another code: message is the error's own (English) text, "" when it has none. */
  readonly otherError: (message: string) => string;
  /** A name for a client that gave none. */
  readonly unnamed: string;
  /** A name for an agent whose connection names neither client nor host. */
  readonly anAgent: string;
  /** A scope picker's row that takes a whole tool with actions (its title). */
  readonly everything: (title: string) => string;
  readonly connect: ConnectMessages;
  /** The chat bar's (@tabrelay/tab/chat), which reads this table too. */
  readonly chat: ChatMessages;
  readonly connections: ConnectionsMessages;
  readonly confirm: {
    readonly heading: (who: string, title: string) => string;
    /** Said when a card goes unanswered: its call was cancelled, timed out or withdrawn. */
    readonly over: (who: string, title: string) => string;
    readonly details: string;
    /** The arguments could not be turned into text. */
    readonly unshowable: string;
    /** Said after the first 4000 characters of the arguments. */
    readonly more: (characters: number) => string;
    readonly once: string;
    readonly connection: string;
    readonly always: string;
    readonly deny: string;
  };
  readonly activity: {
    readonly label: string;
    readonly stop: string;
    readonly dismiss: string;
    /** The buttons' accessible names. */
    readonly stopFor: (who: string) => string;
    readonly dismissFor: (who: string) => string;
    /** The line: who · steps · what now. */
    readonly steps: (n: number) => string;
    readonly acting: (now: string) => string;
    readonly asking: (now: string) => string;
    readonly done: string;
    readonly stopped: string;
    /** Undo turn: the button, its accessible name, and the line while and after the app takes the turn back. */
    readonly undo: string;
    readonly undoFor: (who: string) => string;
    readonly undoing: string;
    readonly undone: string;
    /** The app's undo failed; message is its own sentence. */
    readonly undoFailed: (message: string) => string;
  };
  readonly permissions: {
    readonly kinds: Readonly<Record<PermissionKind, { readonly label: string; readonly explanation: string; readonly reason: string }>>;
    /** The reason of heavy work whose estimate is known, in seconds. */
    readonly heavyAbout: (seconds: number) => string;
    readonly modes: Readonly<Record<Mode | "custom", { readonly title: string; readonly explanation: string }>>;
    readonly settings: Readonly<Record<Setting, string>>;
    readonly legend: string;
    readonly kindsLegend: string;
    readonly noKinds: string;
    readonly allKinds: string;
    readonly someKinds: string;
    readonly none: string;
  };
  readonly dataSwitch: {
    readonly label: string;
    /** Said beside the switch: summaries of small groups can still tell single values. */
    readonly caveat: string;
    /** The document the switch is for (name: the app's, as setDocument gave it). */
    readonly forDocument: (name: string) => string;
  };
  /** The one-time notice of what agents are sent (<tabrelay-notice>). */
  readonly notice: {
    readonly label: string;
    /** doc: the document's name, "" when the app named none. */
    readonly text: (doc: string) => string;
    readonly gotIt: string;
  };
}

/** The Connect panel's sentences, and who asks in words (whoAsks, typedWords). */
export interface ConnectMessages {
  readonly codeLabel: string;
  readonly codePlaceholder: string;
  readonly codeHint: string;
  readonly lookUp: string;
  readonly typeCode: string;
  readonly linkBrought: string;
  readonly heading: string;
  /** appTitle: undefined when the panel has no app. */
  readonly scopeLegend: (appTitle: string | undefined) => string;
  readonly approve: string;
  readonly decline: string;
  readonly yes: string;
  readonly back: string;
  readonly chooseOrDecline: string;
  readonly declined: string;
  /** client, host: "" when unknown (host "": not said). */
  readonly connected: (client: string, host: string) => string;
  readonly disconnected: (client: string) => string;
  readonly undo: string;
  readonly tooOld: string;
  readonly openWindow: string;
  /** The note of a code that came with the approval link. */
  readonly linkNote: string;
  /** While and after a link approval's window confirms it. */
  readonly waiting: string;
  readonly blocked: string;
  readonly otherBrowser: string;
  readonly linkDeclined: string;
  readonly linkExpired: string;
  /** site: the host of the client's metadata document, "" when it has none. */
  readonly published: (name: string, site: string) => string;
  readonly selfNamed: (name: string) => string;
  readonly mixedScript: string;
  readonly punycode: string;
  /** note: mixedScript, punycode or "". */
  readonly returnsTo: (host: string, note: string) => string;
  readonly noReturn: string;
  readonly expired: string;
  readonly expires: (time: string, minutes: number) => string;
  readonly typedWarning: string;
  /** device: "" when the relay could not name it. */
  readonly provenance: (time: string, device: string, sameAddress: boolean) => string;
  readonly typedQuestion: string;
}

/** The Connections panel's sentences (ConnectionsPanel, connectionWords, scopeWords). */
export interface ConnectionsMessages {
  readonly heading: string;
  readonly refresh: string;
  readonly loading: string;
  /** appTitle: undefined when the panel has no app. */
  readonly none: (appTitle: string | undefined) => string;
  readonly stale: string;
  readonly subAgents: (who: string) => string;
  readonly subAgent: (name: string) => string;
  readonly host: string;
  readonly madeBy: string;
  readonly madeFor: (parent: string) => string;
  readonly id: string;
  readonly created: string;
  readonly lastUsed: string;
  readonly mayUse: string;
  readonly unknownHost: string;
  readonly unknownTime: string;
  readonly notRecorded: string;
  /** The scope in words: no tool; a tool this app version lacks; a tool with every action; with some. */
  readonly noTool: string;
  readonly missingTool: (tool: string) => string;
  readonly allActions: (title: string) => string;
  readonly someActions: (title: string, actions: readonly string[]) => string;
  /** Joins the entries of a scope in words. */
  readonly list: (entries: readonly string[]) => string;
  /** who, when another row has the same name and host. */
  readonly whoWithId: (name: string, host: string, id: string) => string;
  readonly edit: string;
  readonly editFor: (who: string) => string;
  readonly forget: string;
  readonly forgetFor: (who: string) => string;
  readonly forgetQuestion: (who: string, appTitle: string | undefined) => string;
  readonly keep: string;
  readonly keepFor: (who: string) => string;
  readonly scopeLegend: (who: string, appTitle: string | undefined) => string;
  readonly emptyScope: string;
  readonly save: string;
  readonly saveFor: (who: string) => string;
  readonly cancel: string;
  readonly cancelFor: (who: string) => string;
  readonly listFailed: string;
  readonly saveFailed: (who: string) => string;
  readonly forgetFailed: (who: string) => string;
  /** scope: the scope in words, "" for none. */
  readonly saved: (who: string, scope: string) => string;
  readonly forgotten: (who: string, appTitle: string | undefined) => string;
  readonly gone: (who: string) => string;
  readonly scopeRefused: string;
}

// The table lives in the page's registry, so that the chat's module (a
// bundle of its own) speaks the language setMessages chose here.
const registry = messagesRegistry();
registry.current ??= en;

/** messages returns the table the elements speak now. */
export function messages(): Messages {
  return (registry.current as Messages | undefined) ?? en;
}

/**
 * setMessages makes table the elements' language (en: back to English).
 * The elements in the page (the chat's too: they follow, chat-messages.ts)
 * draw their words again at once; what the person was in the middle of
 * stays (a code typed, the open questions), sentences said already (an
 * error, a notice) go.
 */
export function setMessages(table: Messages): void {
  registry.current = table;
  for (const redraw of [...registry.redraws]) redraw();
}

/** statusWords says a client's status as a sentence for the page's status line; now is Unix ms (a reconnect's wait). */
export function statusWords(s: Status, now: number = Date.now()): string {
  const w = messages().status;
  switch (s.state) {
    case "reconnecting":
      return w.reconnecting(Math.max(0, Math.ceil((s.retryAt - now) / 1000)), s.code);
    case "stopped":
      return w.stopped[s.why];
    default:
      return w[s.state];
  }
}
