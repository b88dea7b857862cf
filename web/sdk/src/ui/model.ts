// The Connect panel's logic, apart from the DOM so that node's test runner
// can check it: the scope picker's model, who asks in words, and every
// error of a connect request in words.

import type { AppDeclaration, ConnectInfo, ScopeEntry } from "../index.js";

/** One tool of the picker, from the app's declaration. */
export interface PickerTool {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  /** The tool's actions; empty for a tool without actions. */
  readonly actions: readonly { readonly name: string; readonly description: string }[];
}

/**
 * ScopeModel is the scope picker's state: per tool, either the whole tool
 * ("*": every action, also later ones) or some of its actions. Nothing is
 * ticked that the host did not ask for (§8 step 3: requestedScope null
 * ticks nothing).
 */
export class ScopeModel {
  readonly tools: readonly PickerTool[];
  private readonly whole = new Set<string>();
  private readonly actions = new Map<string, Set<string>>();

  constructor(app: Pick<AppDeclaration, "tools">, requested: readonly ScopeEntry[] | null) {
    this.tools = app.tools.map((t) => ({
      name: t.name, title: t.title || t.name, description: t.description,
      actions: (t.actions ?? []).map((a) => ({ name: a.name, description: a.description ?? "" })),
    }));
    for (const e of requested ?? []) {
      const tool = this.tools.find((t) => t.name === e.tool);
      if (!tool) continue; // not a tool of this app: never ticked
      const asked = e.actions ?? ["*"];
      if (tool.actions.length === 0 || asked.includes("*")) this.whole.add(tool.name);
      else for (const a of asked) if (tool.actions.some((x) => x.name === a)) this.set(tool.name, a, true);
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
  /** Where the connection goes. */
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
  const redirect = info.redirectHost
    ? `It returns to ${info.redirectHost}: that is who gets the connection.`
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
