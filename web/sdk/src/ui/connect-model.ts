// The Connect panel's logic, apart from the DOM so that node's test runner
// can check it: the scope picker's model, who asks in words, and every
// error of a connect request in words (the sentences: messages.ts).

import type { AppDeclaration, ConnectInfo, ScopeEntry } from "../index.js";
import { permissionKindsOf, type ToolDeclaration } from "../tools.js";
import { messages, type ErrorCode } from "./messages.js";

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

/** One verb row of the scope panel: an action of a tool, or a tool without actions. */
export interface Verb {
  readonly tool: string;
  readonly action: string | undefined;
  readonly label: string;
  readonly description: string;
}

/**
 * One row of the scope panel (seed 004): the tools of one catalogue
 * `family` (a tool of none is a row of its own), with a switch for the
 * whole row and a verb row per action.
 */
export interface FamilyRow {
  readonly name: string;
  readonly title: string;
  readonly tools: readonly PickerTool[];
  readonly verbs: readonly Verb[];
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
  /** The rows of the scope panel, in the app's order of tools. */
  readonly families: readonly FamilyRow[];
  private readonly whole = new Set<string>();
  private readonly actions = new Map<string, Set<string>>();

  constructor(app: Pick<AppDeclaration, "tools">, requested: readonly ScopeEntry[] | null, fromHost = false) {
    this.tools = app.tools.map((t) => ({
      name: t.name, title: t.title || t.name, description: t.description, asks: asks(t),
      actions: (t.actions ?? []).map((a) => ({ name: a.name, description: a.description ?? "", asks: asks(t, a.name) })),
    }));
    this.families = familiesOf(app.tools, this.tools);
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

  /** count is how many of a row's verbs are chosen, of how many: the panel's "3/4". */
  count(row: FamilyRow): { on: number; of: number } {
    return { on: row.verbs.filter((v) => this.ticked(v.tool, v.action)).length, of: row.verbs.length };
  }

  /** setFamily turns a row on (every tool of it whole: also actions added later) or off (nothing of it). */
  setFamily(row: FamilyRow, on: boolean): void {
    for (const t of row.tools) {
      this.set(t.name, undefined, on);
      if (!on) this.actions.delete(t.name);
    }
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

/** familiesOf groups tools by their family, in the order each family first appears. */
function familiesOf(declared: readonly ToolDeclaration[], tools: readonly PickerTool[]): FamilyRow[] {
  const rows = new Map<string, { name: string; title: string; tools: PickerTool[] }>();
  tools.forEach((t, i) => {
    const family = declared[i]?.family?.trim();
    const key = family ? "family:" + family : "tool:" + t.name;
    const row = rows.get(key) ?? { name: family || t.name, title: family ? family.charAt(0).toUpperCase() + family.slice(1) : t.title, tools: [] };
    row.tools.push(t);
    rows.set(key, row);
  });
  return [...rows.values()].map((r) => ({
    ...r,
    verbs: r.tools.flatMap((t): Verb[] => t.actions.length
      ? t.actions.map((a) => ({ tool: t.name, action: a.name, label: `${t.title}: ${a.name}`, description: a.description }))
      : [{ tool: t.name, action: undefined, label: t.title, description: t.description }]),
  }));
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
export function whoAsks(info: ConnectInfo, now: number, timeOf: (ms: number) => string = messages().time): WhoAsks {
  const w = messages().connect;
  const name = info.client || messages().unnamed;
  const identity = info.clientKind === "metadata-document" ? w.published(name, hostOf(info.clientUrl)) : w.selfNamed(name);
  const lookalike = info.redirectHostMixedScript ? w.mixedScript : /(^|\.)xn--/.test(info.redirectHost) ? w.punycode : "";
  const redirect = info.redirectHost ? w.returnsTo(info.redirectHost, lookalike) : w.noReturn;
  const expiry = info.expiresAt <= now ? w.expired : w.expires(timeOf(info.expiresAt), Math.ceil((info.expiresAt - now) / 60_000));
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
export function typedWords(info: ConnectInfo, timeOf: (ms: number) => string = messages().time): TypedWords {
  const w = messages().connect;
  return {
    warning: info.crossDevice ? w.typedWarning : messages().errors["cross-device-off"],
    provenance: w.provenance(timeOf(info.startedAt), info.device, info.sameAddress),
    question: w.typedQuestion,
  };
}

/** errorWords is what the panels say for a failed request: the table's sentence for its code, else for another failure. */
export function errorWords(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown } | null;
  const m = messages();
  const code = typeof e?.code === "string" ? e.code : "";
  if (Object.hasOwn(m.errors, code)) return m.errors[code as ErrorCode];
  return m.otherError(typeof e?.message === "string" ? e.message : "");
}
