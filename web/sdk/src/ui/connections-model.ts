// The Connections panel's logic (docs/tab-protocol.md §8 "The Connections
// panel"), apart from the DOM so that node's test runner can check it: a
// connection in words, its scope in words from the app's declaration, and
// ConnectionsPanel, the headless panel — the list as the relay pushes it,
// which row is being edited (with the Connect panel's ScopeModel) or asked
// to be forgotten, and every failure in words. <tabrelay-connections>
// draws it; an app can draw its own from it.

import type { AppDeclaration, ConnectionInfo, ScopeEntry, Status } from "../index.js";
import { messages } from "./messages.js";
import { errorWords, ScopeModel } from "./connect-model.js";

/** The part of a TabClient the panel uses: any object with these methods will do. */
export interface ConnectionsClient {
  readonly connections?: readonly ConnectionInfo[] | undefined;
  onConnections(listener: (list: readonly ConnectionInfo[]) => void): () => void;
  listConnections(): Promise<readonly ConnectionInfo[]>;
  forget(connection: string): Promise<void>;
  setScope(connection: string, scope: readonly ScopeEntry[]): Promise<ConnectionInfo>;
  onStatus?(listener: (s: Status) => void): () => void;
}

/** A connection in words, each a line of plain text (never HTML). */
export interface ConnectionWords {
  /** The client's name. */
  readonly name: string;
  /** The host its redirect goes back to. */
  readonly host: string;
  /** Name and host, "Claude (claude.ai)": what buttons are named with. */
  readonly who: string;
  /** A short part of the connection's id (not a secret): tells apart connections of one client. */
  readonly shortId: string;
  /** When it was approved (or derived), to the second. */
  readonly created: string;
  readonly lastUsed: string;
  /** What it may use, from the app's declaration. */
  readonly scope: string;
}

type Tools = Pick<AppDeclaration, "tools"> | undefined;

/** scopeWords says what a scope grants, with the tools' titles: "Echo; Counter: get, increment". */
export function scopeWords(scope: readonly ScopeEntry[], app: Tools): string {
  const m = messages().connections;
  if (scope.length === 0) return m.noTool;
  return m.list(scope.map((e) => {
    const tool = app?.tools.find((t) => t.name === e.tool);
    if (!tool) return m.missingTool(e.tool);
    const title = tool.title || tool.name;
    const actions = e.actions ?? ["*"];
    if (!tool.actions?.length) return title;
    return actions.includes("*") ? m.allActions(title) : m.someActions(title, actions);
  }));
}

/** connectionWords puts a connection in words; timeOf formats Unix ms. */
export function connectionWords(c: ConnectionInfo, app: Tools, timeOf: (ms: number) => string = messages().dateTime): ConnectionWords {
  const m = messages().connections;
  const name = c.client || messages().unnamed;
  const host = c.host || m.unknownHost;
  return {
    name, host, who: `${name} (${host})`, shortId: shortId(c.id),
    created: c.createdAt ? timeOf(c.createdAt) : m.unknownTime,
    // The relay moves lastUsedAt at the host's token refreshes (about
    // hourly while it works), not at each call (§7).
    lastUsed: c.lastUsedAt > c.createdAt ? timeOf(c.lastUsedAt) : m.notRecorded,
    scope: scopeWords(c.scope, app),
  };
}

/** shortId is six characters of a connection's id past its kind ("conn_"): enough to tell a browser's connections apart. */
export function shortId(id: string): string {
  return id.slice(id.indexOf("_") + 1).slice(0, 6);
}

/**
 * What a row shows: its words, and the view, the scope picker ("edit") or
 * the forget question ("forget"). Rows come in the panel's order: each
 * connection a person approved, newest first, followed by the connections
 * derived from it (a host's sub-agents), each under its parent (depth).
 * When several rows have one name and host, `who` adds the short id.
 */
export interface ConnectionRow extends ConnectionWords {
  readonly id: string;
  readonly connection: ConnectionInfo;
  /** 0 for a connection a person approved (or one whose parent is not listed); 1 for its sub-agents', and so on. */
  readonly depth: number;
  /** The listed connection it was derived from. */
  readonly parentId: string | undefined;
  /** Its parent's `who`, when it was derived from a listed one; "" otherwise. */
  readonly derivedFrom: string;
  readonly mode: "view" | "edit" | "forget";
  /** The scope picker while editing: the Connect panel's model, ticked as the connection's scope is. */
  readonly picker: ScopeModel | undefined;
  /** A request of this row is under way. */
  readonly busy: boolean;
}

/**
 * ConnectionsPanel is the panel without its DOM. open() follows the
 * client's list (asking for it once; pushes replace it), close() stops.
 * A row is viewed, edited (edit, save, cancel) or asked about (askForget,
 * forget, cancel). alert holds the last failure in words, notice the last
 * thing done. onChange tells every change.
 */
export class ConnectionsPanel {
  /** The list as last heard, newest first; undefined until known. */
  list: readonly ConnectionInfo[] | undefined;
  alert = "";
  notice = "";
  /** The client's status, when it tells: a list heard while not connected may be out of date. */
  status: Status | undefined;
  private readonly modes = new Map<string, { mode: "edit" | "forget"; picker?: ScopeModel | undefined; who: string }>();
  private readonly busyIds = new Set<string>();
  private readonly listeners = new Set<() => void>();
  private subscriptions: (() => void)[] = [];

  constructor(readonly client: ConnectionsClient, readonly app?: AppDeclaration, private readonly timeOf?: (ms: number) => string) {}

  /** open follows the client's connections and asks for the list once (§8: ask once when the panel opens). */
  open(): void {
    if (this.subscriptions.length) return;
    this.subscriptions = [this.client.onConnections((l) => this.take(l))];
    if (this.client.onStatus) this.subscriptions.push(this.client.onStatus((s) => ((this.status = s), this.changed())));
    void this.refresh();
  }

  /** close stops following. */
  close(): void {
    for (const un of this.subscriptions) un();
    this.subscriptions = [];
  }

  /** The list is not known to be current: the client is not connected. */
  get stale(): boolean {
    return this.status !== undefined && this.status.state !== "connected";
  }

  get rows(): ConnectionRow[] {
    const list = this.list ?? [];
    const listed = new Set(list.map((c) => c.id));
    const kids = new Map<string, ConnectionInfo[]>();
    for (const c of list) {
      const parent = c.parentId && listed.has(c.parentId) ? c.parentId : "";
      kids.set(parent, [...(kids.get(parent) ?? []), c]);
    }
    const words = new Map(list.map((c) => [c.id, connectionWords(c, this.app, this.timeOf)]));
    const count = new Map<string, number>();
    for (const w of words.values()) count.set(w.who, (count.get(w.who) ?? 0) + 1);
    const who = (id: string) => {
      const w = words.get(id)!;
      return count.get(w.who)! > 1 ? messages().connections.whoWithId(w.name, w.host, w.shortId) : w.who;
    };
    const out: ConnectionRow[] = [];
    const visit = (parent: string, depth: number) => {
      for (const c of kids.get(parent) ?? []) {
        const m = this.modes.get(c.id);
        out.push({
          ...words.get(c.id)!, who: who(c.id), id: c.id, connection: c, depth, parentId: parent || undefined,
          derivedFrom: parent ? who(parent) : "", mode: m?.mode ?? "view", picker: m?.picker, busy: this.busyIds.has(c.id),
        });
        if (depth < 8) visit(c.id, depth + 1); // the relay allows four levels; a cycle cannot loop here
      }
    };
    visit("", 0);
    return out;
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** refresh asks the relay for the list; the answer reaches every listener of the client. */
  async refresh(): Promise<void> {
    try {
      this.take(await this.client.listConnections()); // a TabClient told the listeners already: the same list
    } catch (err) {
      this.fail(messages().connections.listFailed, err);
    }
  }

  /** edit opens the scope picker of a row, ticked as its scope is now. */
  edit(id: string): void {
    const c = this.find(id);
    if (!c || !this.app) return;
    this.modes.set(id, { mode: "edit", picker: new ScopeModel(this.app, c.scope), who: this.whoOf(id) });
    this.say("", "");
  }

  /** askForget asks the person whether to forget a row's connection: nothing is forgotten without their second word. */
  askForget(id: string): void {
    const c = this.find(id);
    if (!c) return;
    this.modes.set(id, { mode: "forget", who: this.whoOf(id) });
    this.say("", "");
  }

  /** cancel goes back to viewing a row. */
  cancel(id: string): void {
    this.modes.delete(id);
    this.changed();
  }

  /** save writes the edited scope (none ticked: no access). */
  async save(id: string): Promise<boolean> {
    const m = this.modes.get(id);
    if (m?.mode !== "edit" || !m.picker) return false;
    return this.run(id, messages().connections.saveFailed(m.who), async () => {
      const c = await this.client.setScope(id, m.picker!.scope());
      this.modes.delete(id);
      if (this.list) this.list = this.list.map((x) => (x.id === id ? c : x));
      this.notice = messages().connections.saved(m.who, c.scope.length ? scopeWords(c.scope, this.app) : "");
    });
  }

  /** forget ends a row's connection, once askForget asked. */
  async forget(id: string): Promise<boolean> {
    const m = this.modes.get(id);
    if (m?.mode !== "forget") return false;
    return this.run(id, messages().connections.forgetFailed(m.who), async () => {
      await this.client.forget(id);
      this.modes.delete(id);
      // Its sub-agents' connections end with it (the relay's next list says so too).
      const gone = new Set([id]);
      for (const r of this.rows) if (r.parentId && gone.has(r.parentId)) gone.add(r.id);
      if (this.list) this.list = this.list.filter((x) => !gone.has(x.id));
      this.notice = messages().connections.forgotten(m.who, this.app?.app.title);
    });
  }

  private async run(id: string, failure: string, fn: () => Promise<void>): Promise<boolean> {
    if (this.busyIds.has(id)) return false;
    this.busyIds.add(id);
    this.say("", "");
    try {
      await fn();
      return true;
    } catch (err) {
      this.fail(failure, err);
      return false;
    } finally {
      this.busyIds.delete(id);
      this.changed();
    }
  }

  /** whoOf is a row's `who`: its name and host, with its short id when another row has the same. */
  private whoOf(id: string): string {
    return this.rows.find((r) => r.id === id)?.who ?? "";
  }

  private find(id: string): ConnectionInfo | undefined {
    return this.list?.find((c) => c.id === id);
  }

  /** take replaces the list with one heard; a row being edited or asked about that is gone says so. */
  private take(list: readonly ConnectionInfo[]): void {
    this.list = [...list].sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? -1 : 1));
    for (const [id, m] of this.modes) {
      if (list.some((c) => c.id === id)) continue;
      this.modes.delete(id);
      if (!this.busyIds.has(id)) this.notice = messages().connections.gone(m.who);
    }
    this.changed();
  }

  private fail(what: string, err: unknown): void {
    const code = (err as { code?: unknown } | null)?.code;
    // Only set-scope is refused so here: the relay's bundle lacks a tool this page declares.
    this.say(`${what} ${code === "invalid-scope" ? messages().connections.scopeRefused : errorWords(err)}`, "");
    if (code === "not-found") void this.refresh(); // gone already: the list says so
  }

  private say(alert: string, notice: string): void {
    this.alert = alert;
    this.notice = notice;
    this.changed();
  }

  private changed(): void {
    for (const l of this.listeners) {
      try {
        l();
      } catch (err) {
        console.warn("tabrelay: a connections listener threw", err);
      }
    }
  }
}
