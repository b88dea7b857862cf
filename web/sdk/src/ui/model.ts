// The Connect panel's logic, apart from the DOM so that node's test runner
// can check it: the scope picker's model, who asks in words, and every
// error of a connect request in words.

import type { AppDeclaration, ConnectInfo, ScopeEntry } from "../index.js";
import { permissionKindsOf, type ToolDeclaration } from "../tools.js";

/** One tool of the picker, from the app's declaration. */
export interface PickerTool {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  /** Calls of the tool (without actions) ask the person: it declares permission kinds, or is destructive. */
  readonly asks: boolean;
  /** The tool's actions; empty for a tool without actions. */
  readonly actions: readonly { readonly name: string; readonly description: string; readonly asks: boolean }[];
}

/** asks: does a call of tool (and action) raise a question with the person (a permission kind, or a destructive tool)? */
function asks(tool: ToolDeclaration, action?: string): boolean {
  return permissionKindsOf(tool, action).length > 0 || tool.annotations?.destructiveHint === true;
}

/**
 * ScopeModel is the scope picker's state: per tool, either the whole tool
 * ("*": every action, also later ones) or some of its actions. Nothing is
 * ticked but the scope it starts from: a connection's own, or what a host
 * asked for (fromHost; §8 step 3: requestedScope null ticks nothing). Of
 * what a host asked for, nothing that asks the person (changes, deletions
 * and the other permission kinds) is ticked, nor a whole tool with actions
 * (its later actions may ask): the person ticks those themselves, whatever
 * the host asked for (issue 23).
 */
export class ScopeModel {
  readonly tools: readonly PickerTool[];
  private readonly whole = new Set<string>();
  private readonly actions = new Map<string, Set<string>>();

  constructor(app: Pick<AppDeclaration, "tools">, requested: readonly ScopeEntry[] | null, fromHost = false) {
    this.tools = app.tools.map((t) => ({
      name: t.name, title: t.title || t.name, description: t.description, asks: asks(t),
      actions: (t.actions ?? []).map((a) => ({ name: a.name, description: a.description ?? "", asks: asks(t, a.name) })),
    }));
    for (const e of requested ?? []) {
      const tool = this.tools.find((t) => t.name === e.tool);
      if (!tool) continue; // not a tool of this app: never ticked
      const asked = e.actions ?? ["*"];
      if (!fromHost) {
        if (tool.actions.length === 0 || asked.includes("*")) this.whole.add(tool.name);
        else for (const a of asked) if (tool.actions.some((x) => x.name === a)) this.set(tool.name, a, true);
      } else if (tool.actions.length === 0) {
        if (!tool.asks) this.whole.add(tool.name);
      } else {
        for (const a of tool.actions) if (!a.asks && (asked.includes("*") || asked.includes(a.name))) this.set(tool.name, a.name, true);
      }
    }
  }

  /** ticked: is the whole tool (action undefined), or one of its actions, chosen? An action is also chosen with its whole tool. */
  ticked(tool: string, action?: string): boolean {
    if (this.whole.has(tool)) return true;
    return action !== undefined && (this.actions.get(tool)?.has(action) ?? false);
  }

  /** set ticks or unticks the whole tool (action undefined) or one action. */
  set(tool: string, action: string | undefined, on: boolean): void {
    if (action === undefined) {
      if (on) this.whole.add(tool);
      else this.whole.delete(tool);
      return;
    }
    const set = this.actions.get(tool) ?? new Set<string>();
    if (on) set.add(action);
    else set.delete(action);
    this.actions.set(tool, set);
  }

  /** scope is the choice as the relay takes it, in the app's order of tools and actions. */
  scope(): ScopeEntry[] {
    const out: ScopeEntry[] = [];
    for (const t of this.tools) {
      if (this.whole.has(t.name)) {
        out.push(t.actions.length ? { tool: t.name, actions: ["*"] } : { tool: t.name });
        continue;
      }
      const chosen = t.actions.filter((a) => this.actions.get(t.name)?.has(a.name)).map((a) => a.name);
      if (chosen.length) out.push({ tool: t.name, actions: chosen });
    }
    return out;
  }
}

/** The words of who asks, each a line of plain text (never HTML). */
export interface WhoAsks {
  /** The client's name, as the panel shows it. */
  readonly name: string;
  /** How much that name is worth: published by a site, or chosen by the client itself. */
  readonly identity: string;
  /** Where the host says it returns to (not who gets the connection), with a warning for a look-alike. */
  readonly redirect: string;
  /** When the code expires. */
  readonly expiry: string;
}

/** whoAsks puts a connect-info answer in words; now is Unix ms. */
export function whoAsks(info: ConnectInfo, now: number, timeOf: (ms: number) => string = clockTime): WhoAsks {
  const name = info.client || "An application without a name";
  const identity = info.clientKind === "metadata-document"
    ? `${name}, as published by ${hostOf(info.clientUrl) || "its site"}.`
    : `An application that calls itself “${name}”. Anyone can register any name: check that you started this yourself.`;
  const lookalike = info.redirectHostMixedScript
    ? " Careful: this address mixes letters of different alphabets, as look-alike addresses do."
    : /(^|\.)xn--/.test(info.redirectHost) ? " (An address with letters outside a–z, shown in its ASCII form.)" : "";
  const redirect = info.redirectHost
    ? `It says it returns to ${info.redirectHost}.${lookalike}`
    : "It did not say where it returns to.";
  const minutes = Math.ceil((info.expiresAt - now) / 60_000);
  const expiry = info.expiresAt <= now
    ? "The code has expired."
    : `The code expires at ${timeOf(info.expiresAt)} (in ${minutes} minute${minutes === 1 ? "" : "s"}).`;
  return { name, identity, redirect, expiry };
}

export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "";
  }
}

/** The words of a typed code: who gets it is unknown, where it started, and the second question. */
export interface TypedWords {
  readonly warning: string;
  readonly provenance: string;
  readonly question: string;
}

/**
 * typedWords says what a typed code cannot prove (§8 step 5): the code may
 * come from another device, so the panel cannot tell who gets the
 * connection; it says what the relay knows of where the request started.
 */
export function typedWords(info: ConnectInfo, timeOf: (ms: number) => string = clockTime): TypedWords {
  const warning = info.crossDevice
    ? "This app cannot tell who will get this connection: whoever opened the agent's page gets it, on any device. Approve only if you started this request yourself, just now."
    : ERROR_WORDS["cross-device-off"]!;
  const device = info.device ? ` from ${info.device}` : " from a device the relay could not name";
  const address = info.sameAddress ? "the same network address as this browser" : "another network address than this browser";
  const provenance = `The request was started at ${timeOf(info.startedAt)}${device}, from ${address}.`;
  return { warning, provenance, question: "Connect it, though this app cannot tell who gets it?" };
}

/** The panel's note for a code that came with the approval link. */
export const LINK_NOTE = "You opened an approval link: approving opens a small window of the relay, which checks that this request was started in this browser.";

/** The panel's sentences while and after a link approval's window confirms it. */
export const CONFIRM_WORDS = {
  waiting: "Waiting for the relay's window to check that this request was started in this browser. If no window opened, or you closed it, open it again.",
  blocked: "The browser blocked the relay's window: open it with the button.",
  "other-browser": "This request was started in another browser, so it was not connected: if you did not start it just now, someone may be trying to trick you into connecting their agent to your account.",
  declined: "This request was declined: the agent is not connected.",
  expired: "This code's 10 minutes are over before the relay's window confirmed it. Start again from the agent's application.",
} as const;

function clockTime(ms: number): string {
  return new Date(ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

/** The panel's sentence for each error code of a connect request (§7 `error`). */
export const ERROR_WORDS: Readonly<Record<string, string>> = {
  "wrong-code": "No agent waits for this code. Check it on the page of the application that asks, and type it again.",
  "code-used": "This code has been used already. Start again from the agent's application.",
  "code-expired": "This code's 10 minutes are over. Start again from the agent's application.",
  limited: "Too many wrong codes were tried from this browser. Wait a minute, then try again.",
  "invalid-scope": "Choose at least one of this app's tools.",
  unavailable: "The relay could not do this just now. Try again in a moment.",
  unsupported: "This relay cannot connect agents from the app yet.",
  "not-found": "That connection no longer exists.",
  "cross-device-off": "This relay accepts a connect code only through the approval link on the agent's page, opened in this browser: open that link here instead of typing the code.",
};

/** errorWords is what the panel says for a failed request: its own sentence for a relay code, else the error's own. */
export function errorWords(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === "string" ? e.code : "";
  const own = ERROR_WORDS[code];
  if (own) return own;
  const message = typeof e?.message === "string" ? e.message : "";
  return message || "Something went wrong. Try again.";
}
