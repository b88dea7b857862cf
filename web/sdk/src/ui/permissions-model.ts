// The person's permissions (seed 000 "The person's permissions", "Agents
// and the data"), headless: the kinds, each Ask, Allow or Deny; the modes
// as presets; the decision of a call; the "This connection" grants; the
// data switch; the answers to the relay's permissions-query; and the
// questions the confirm card shows. No DOM: the elements of this entry, or
// an app's own UI, render what it asks. Given to the client as its
// `permissions` option, it decides every call before the handler runs.

import type { CallGate, Connection, Permission, PermissionKind, PermissionsQuery, SentCall, StorageLike, TabResult, ToolCall, ToolDeclaration } from "../index.js";
import { noteText, PERMISSION_KINDS, permissionKindsOf, refusal, ToolError, type AppDeclaration, type ConfirmAt, type JsonObject, type ToolArguments, type ToolName } from "../index.js";
import { DocumentScopes, listed, type AgentDocument } from "./data-scope.js";
import { messages } from "./messages.js";
import { Turns, whoOf, type UndoTurn } from "./turns.js";

/** What the person set for one kind of question. */
export type Setting = "ask" | "allow" | "deny";
export type Settings = Readonly<Record<PermissionKind, Setting>>;

/** Work estimated at this long or longer on this device counts as `heavy`: the person's attention span. */
export const HEAVY_MS = 10_000;

const ASK_CONFIRM_KINDS = {
  "writes-file": "ask", "deletes-saved": "ask", "large-download": "ask", publishes: "ask", "pauses-recording": "ask",
} as const;

/** The modes: presets of every kind's setting (their titles: messages().permissions.modes). */
export const MODES = {
  /** The default: changes run, heavy and irreversible work is asked about. */
  "ask-heavy-irreversible": { settings: { change: "allow", heavy: "ask", ...ASK_CONFIRM_KINDS } },
  "allow-undoable": { settings: { change: "allow", heavy: "allow", ...ASK_CONFIRM_KINDS } },
  /** Reads run (a heavy read is asked about); nothing that changes anything does. */
  "read-only": {
    settings: { change: "deny", heavy: "ask", "writes-file": "deny", "deletes-saved": "deny", "large-download": "deny", publishes: "deny", "pauses-recording": "deny" },
  },
} as const satisfies Record<string, { settings: Settings }>;
export type Mode = keyof typeof MODES;
export const DEFAULT_MODE: Mode = "ask-heavy-irreversible";

/** The kinds in the words of the refusal the agent reads (English, as every sentence to the agent). */
const KIND_PHRASES: Readonly<Record<PermissionKind, string>> = {
  change: "changes", heavy: "heavy work", "writes-file": "writing files", "deletes-saved": "deleting saved things",
  "large-download": "large downloads", publishes: "publishing", "pauses-recording": "pausing the recording",
};

const STRICTNESS: Readonly<Record<Setting, number>> = { allow: 0, ask: 1, deny: 2 };

/** A decision: the strictest setting among a call's kinds, and the kinds that have it (none for allow). */
export interface Decision {
  readonly setting: Setting;
  readonly kinds: readonly PermissionKind[];
}

/**
 * decide returns what settings make of a call raising kinds. `heavy`
 * counts only when the work is heavy; a kind granted for the connection
 * asks no more (a denied one stays denied).
 */
export function decide(settings: Settings, kinds: readonly PermissionKind[], heavy: boolean, granted: ReadonlySet<PermissionKind> = new Set()): Decision {
  let setting: Setting = "allow";
  let deciding: PermissionKind[] = [];
  for (const kind of kinds) {
    if (kind === "heavy" && !heavy) continue;
    let s = settings[kind];
    if (s === "ask" && granted.has(kind)) s = "allow";
    if (STRICTNESS[s] > STRICTNESS[setting]) [setting, deciding] = [s, []];
    if (s === setting && s !== "allow") deciding.push(kind);
  }
  return { setting, kinds: deciding };
}

/** The person's answer to a question: Allow once, This connection, Always, or Deny. */
export type Answer = "once" | "connection" | "always" | "deny";

/** One question to the person about one call, as the confirm card shows it. */
export interface Question {
  /** The call's id. */
  readonly id: string;
  readonly connection: Connection;
  /** Who asks: "Claude (claude.ai)". */
  readonly who: string;
  readonly tool: string;
  readonly action: string | undefined;
  /** What: the tool's title, and its action. */
  readonly title: string;
  readonly arguments: Readonly<Record<string, unknown>>;
  /** The arguments as text, for the card's Details (cut at 4000 characters). */
  readonly details: string;
  /** Why: the kinds asked about, and a sentence for each, after the handler's own sentence when it asks (ToolCall.confirm). */
  readonly kinds: readonly PermissionKind[];
  readonly reasons: readonly string[];
  /** start: before the handler runs; handler: from the running handler, once it knows the cost (ToolCall.confirm). */
  readonly stage: "start" | "handler";
  readonly turn: string;
  /** Fires when the question is over however it ended: answered, or moot (the call cancelled, the turn stopped, the tab closing). */
  readonly signal: AbortSignal;
  /** showing says the person sees the question now: the relay then tells the agent it waits for them (`asking`). */
  showing(): void;
}

/** A confirmer shows a question and resolves with the person's answer; a moot question's answer is ignored. */
export type Confirmer = (question: Question) => Promise<Answer>;

/**
 * An estimate of a call's work on this device, in ms; undefined when it
 * cannot tell (then `heavy` counts). Args: the tool's arguments' type.
 */
export type Estimate<Args = JsonObject> = (call: { readonly action: string | undefined; readonly arguments: Args }) => number | undefined;

/** The browser parts the permissions use (tests replace them). */
export interface PermissionsEnvironment {
  /** null: the settings live for the page only. */
  storage: StorageLike | null;
  /** Calls listener with the key of each change another tab made to the storage ("storage" events). */
  onStorage(listener: (key: string | null) => void): () => void;
  /** Calls listener when the page goes away ("pagehide"). */
  onPageHide(listener: () => void): () => void;
}

export interface PermissionsOptions<A extends AppDeclaration> {
  app: A;
  /** A function per heavy tool estimating its work from the arguments; without one, `heavy` always counts. */
  estimates?: { readonly [N in ToolName<A>]?: Estimate<ToolArguments<A, N>> };
  /** Shows questions; the confirm card sets itself here too (setConfirmer). */
  confirm?: Confirmer;
  /** The prefix of the storage keys `<prefix>:permissions:<app name>` and `<prefix>:data:<app name>`; "tabrelay". */
  storagePrefix?: string;
  environment?: Partial<PermissionsEnvironment>;
}

interface Stored {
  kinds: Partial<Record<PermissionKind, Setting>>;
  /** The data switch as an older version kept it, for the whole app: the default of documents without their own. */
  summariesOnly: boolean;
}

type Ending = Answer | "moot" | "reconsider" | "closing" | { withdrawn: string };

interface Pending {
  question: Question;
  settle(answer: Ending): void;
  recheck(): boolean;
}

/** Why questions are withdrawn when the app shows another document. */
export const ANOTHER_DOCUMENT = "another document is shown in the tab now";

/** createPermissions makes the person's permissions of an app, for the client's `permissions` option. */
export function createPermissions<const A extends AppDeclaration>(options: PermissionsOptions<A>): Permissions<A> {
  return new Permissions(options);
}

export class Permissions<A extends AppDeclaration = AppDeclaration> implements CallGate {
  /** The agents' turns, for the activity line. */
  readonly turns = new Turns();
  private readonly tools = new Map<string, ToolDeclaration>();
  private readonly env: PermissionsEnvironment;
  private readonly key: string;
  private readonly listeners = new Set<(mine: boolean) => void>();
  private readonly questionListeners = new Set<() => void>();
  private readonly grants = new Map<string, Set<PermissionKind>>();
  private readonly pending = new Set<Pending>();
  private readonly withholdListeners = new Set<() => void>();
  /** The document each running call started on (its key), for the check when its result is sent. */
  private readonly startedOn = new Map<string, string>();
  private readonly scope: DocumentScopes;
  private stored: Stored;
  /** The documents whose switch was on at the last change: one more, and the results kept for redeliveries go. */
  private wasOn = new Set<string>();
  private confirmer: Confirmer | undefined;

  constructor(private readonly options: PermissionsOptions<A>) {
    for (const tool of options.app.tools) this.tools.set(tool.name, tool);
    this.env = { ...defaultPermissionsEnvironment(), ...options.environment };
    this.key = `${options.storagePrefix ?? "tabrelay"}:permissions:${options.app.app.name}`;
    this.confirmer = options.confirm;
    this.stored = this.load();
    this.scope = new DocumentScopes(this.env.storage, `${options.storagePrefix ?? "tabrelay"}:data:${options.app.app.name}`, () => this.stored.summariesOnly);
    this.env.onStorage((key) => {
      const before = JSON.stringify(this.stored);
      if (key === null || key === this.key) this.stored = this.load();
      const data = (key === null || key === this.scope.key) && this.scope.reload();
      if (data || JSON.stringify(this.stored) !== before) this.changed(false);
    });
    this.env.onPageHide(() => this.pending.forEach((p) => p.settle("closing")));
    this.wasOn = new Set(this.scope.onKeys());
  }

  /** The app's declaration these permissions were made for. */
  get app(): A {
    return this.options.app;
  }

  /** Every kind's setting now. */
  get settings(): Settings {
    const settings = { ...MODES[DEFAULT_MODE].settings } as Record<PermissionKind, Setting>;
    for (const kind of PERMISSION_KINDS) settings[kind] = this.stored.kinds[kind] ?? settings[kind];
    return settings;
  }

  /** The mode whose preset the settings are, or "custom". */
  get mode(): Mode | "custom" {
    const now = this.settings;
    const match = (Object.keys(MODES) as Mode[]).find((m) => PERMISSION_KINDS.every((k) => MODES[m].settings[k] === now[k]));
    return match ?? "custom";
  }

  /** setMode sets every kind to the mode's preset; another mode throws. */
  setMode(mode: Mode): void {
    if (!Object.hasOwn(MODES, mode)) throw new TypeError(`tabrelay permissions: no mode ${String(mode)}`);
    this.save({ kinds: { ...MODES[mode].settings } });
  }

  /** set sets one kind; another kind or setting throws (one the decision cannot rank would let calls run). */
  set(kind: PermissionKind, setting: Setting): void {
    if (!PERMISSION_KINDS.includes(kind) || !Object.hasOwn(STRICTNESS, setting)) {
      throw new TypeError(`tabrelay permissions: ${String(kind)} cannot be set to ${String(setting)}`);
    }
    this.save({ kinds: { [kind]: setting } });
  }

  /** The document shown: the data switch and the notice are its. */
  get document(): AgentDocument {
    return this.scope.document;
  }

  /**
   * setDocument says which document (dataset, board, file) the app shows:
   * id is its identity across pages and tabs (without one, or null, the
   * switch and the notice last for the page). Another document withdraws
   * the questions waiting for the person.
   */
  setDocument(doc: AgentDocument | null): void {
    if (!this.scope.show(doc)) return;
    this.withdraw(ANOTHER_DOCUMENT);
    this.changed(true);
  }

  /** The data switch "Agents see names and summaries only" of the document shown: the person's alone, no call can change it. */
  get summariesOnly(): boolean {
    return this.scope.summariesOnly();
  }

  setSummariesOnly(on: boolean): void {
    this.scope.setSummariesOnly(on);
    this.changed(true);
  }

  /** Whether the notice of what agents are sent is due: an agent acted on the document shown, and the person has not said Got it. */
  get noticeDue(): boolean {
    return this.scope.noticeDue;
  }

  /** gotIt remembers for the document shown that the person read the notice. */
  gotIt(): void {
    this.scope.gotIt();
    this.changed(true);
  }

  /**
   * markShaped says that an agent made the group (by the name a tool's
   * dataScope.groups argument gives it) by naming cells: while the switch
   * is on, summaries over it are refused. For the document shown and the page only.
   */
  markShaped(group: string): void {
    this.scope.markShaped(group);
  }

  /**
   * withdraw ends every question waiting for the person: it became moot
   * (a saved state was loaded over the history, say). The agent reads
   * that it was not run, and why: reason, a clause.
   */
  withdraw(reason: string): void {
    for (const p of [...this.pending]) p.settle({ withdrawn: String(reason) });
  }

  /** onWithhold calls listener when the results kept for redeliveries must go: the switch turned on (CallGate). */
  onWithhold(listener: () => void): () => void {
    this.withholdListeners.add(listener);
    return () => this.withholdListeners.delete(listener);
  }

  /** sending checks the switch again as a result goes out: refused, stripped, or as it is (CallGate). */
  sending(call: SentCall, result: TabResult): TabResult {
    const on = this.startedOn.get(call.id);
    this.startedOn.delete(call.id);
    return this.scope.sending(call, result, on);
  }

  /** grant lets a connection run calls of these kinds without asking, until the page closes ("This connection"). */
  grant(connectionId: string, kinds: readonly PermissionKind[]): void {
    // A call that names no connection (no relay sends one) is granted nothing: its grant would cover every other such call.
    if (!connectionId) return;
    const set = this.grants.get(connectionId) ?? new Set();
    kinds.forEach((k) => set.add(k));
    this.grants.set(connectionId, set);
    this.changed(true);
  }

  /**
   * onChange calls listener after every change of what agents may do (the
   * settings, the data switch, a grant) with mine: true when this tab made
   * it, false when it followed another tab's. The client announces only
   * its own (permissions-changed). It returns the unsubscribe.
   */
  onChange(listener: (mine: boolean) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** onQuestions calls listener each time a question comes or goes (questions); it returns the unsubscribe. */
  onQuestions(listener: () => void): () => void {
    this.questionListeners.add(listener);
    return () => this.questionListeners.delete(listener);
  }

  /** onStep calls listener when the person stops or undoes an agent's turn: the client sends the relay a step by the person (§12). */
  onStep(listener: () => void): () => void {
    return this.turns.onStop(listener);
  }

  /** onUndoTurn registers the app's undo of an agent's turn (Turns.onUndoTurn): the activity line then offers Undo turn. */
  onUndoTurn(undo: UndoTurn): () => void {
    return this.turns.onUndoTurn(undo);
  }

  /** setConfirmer sets who shows the questions (null: none, and calls that ask are refused). */
  setConfirmer(confirmer: Confirmer | null): void {
    this.confirmer = confirmer ?? undefined;
  }

  /** The questions waiting for the person now. */
  get questions(): readonly Question[] {
    return [...this.pending].map((p) => p.question);
  }

  /** decisionFor returns what the settings make of a call; estimateMs undefined means heavy counts. */
  decisionFor(tool: ToolDeclaration, action: string | undefined, connectionId: string, estimateMs?: number): Decision {
    if (this.summariesOnly && this.scope.refusal(tool, {})) return { setting: "deny", kinds: [] };
    const heavy = !(estimateMs !== undefined && estimateMs < HEAVY_MS);
    return decide(this.settings, permissionKindsOf(tool, action), heavy, this.grants.get(connectionId));
  }

  /**
   * answer answers a permissions-query (§7): "refused" when every way of
   * calling the tool is refused, "asks" when any may ask (heavy work is
   * counted as possible), else "runs". Tools this app does not declare
   * are left out.
   */
  answer(query: PermissionsQuery): Record<string, Permission> {
    const out: Record<string, Permission> = {};
    for (const name of query.tools) {
      const tool = this.tools.get(name);
      if (!tool) continue;
      const ways = tool.actions?.length ? tool.actions.map((a) => a.name) : [undefined];
      const settings = ways.map((w) => this.decisionFor(tool, w, query.connection.id).setting);
      out[name] = settings.every((s) => s === "deny") ? "refused" : settings.includes("ask") ? "asks" : "runs";
    }
    return out;
  }

  /** run is the client's gate: it refuses, asks, or runs each call (CallGate). */
  run(call: ToolCall, tool: ToolDeclaration, next: (call: ToolCall) => Promise<TabResult>): Promise<TabResult> {
    this.startedOn.set(call.id, this.scope.shownKey);
    if (this.scope.act()) this.changed(false); // the notice is due: the elements hear it, the relay need not
    // The person may turn the switch on while it runs: sending checks again.
    return this.turns.track(call, titleOf(tool, call.action), (call) => this.admit(call, tool, next));
  }

  /**
   * admit decides a call before its handler runs, and gives the handler
   * its confirm: for a tool asking at "handler", the same decision with the
   * handler's detail (an ask before it is left to the handler); for
   * another, at once (the question was asked before).
   */
  private async admit(call: ToolCall, tool: ToolDeclaration, next: (call: ToolCall) => Promise<TabResult>): Promise<TabResult> {
    const estimate = this.estimate(tool, call);
    const later = confirmAtOf(tool, call.action) === "handler";
    const refused = await this.clearance(call, tool, estimate, later ? null : undefined);
    if (refused) return refused;
    // The handler's refusal comes back as its result: a ToolError of this
    // entry's own copy of the core is no instance of the client's.
    let inHandler: TabResult | undefined;
    const confirm = async (detail: string) => {
      inHandler = later ? await this.clearance(call, tool, estimate, String(detail)) : undefined;
      if (inHandler) throw new ToolError(inHandler.notes?.map(noteText).join(" ") ?? String(inHandler.error));
    };
    const result = await next({ ...call, confirm });
    return inHandler && (result.error !== undefined || result.isError) ? inHandler : result;
  }

  /**
   * clearance returns undefined when the settings, or the person asked,
   * let the call go on, else the result refusing it. detail: the handler's
   * sentence of a question asked from the handler; null: before a handler
   * that asks itself (an ask is left to it).
   */
  private async clearance(call: ToolCall, tool: ToolDeclaration, estimate: number | undefined, detail: string | null | undefined): Promise<TabResult | undefined> {
    const title = titleOf(tool, call.action);
    for (;;) {
      const switched = this.summariesOnly ? this.scope.refusal(tool, call.arguments) : undefined;
      if (switched) return refusal(switched);
      const d = this.decisionFor(tool, call.action, call.connection.id, estimate);
      if (d.setting === "allow" || (d.setting === "ask" && detail === null)) return undefined;
      if (d.setting === "deny") {
        return refusal(`The person's settings in this tab refuse ${listed(d.kinds.map((k) => KIND_PHRASES[k]))} to agents, so “${title}” was not run.`);
      }
      if (!this.confirmer) return refusal(`“${title}” needs the person's confirmation, and this tab has no way to ask; it was not run.`);
      const answer = await this.ask(this.confirmer, call, tool, d.kinds, estimate, detail ?? undefined);
      if (typeof answer === "object") return refusal(`The question to the person about “${title}” was withdrawn (${answer.withdrawn}); it was not run.`);
      switch (answer) {
        case "reconsider":
          continue;
        case "once":
          return undefined;
        case "connection":
          this.grant(call.connection.id, d.kinds);
          return undefined;
        case "always":
          this.save({ kinds: Object.fromEntries(d.kinds.map((k) => [k, "allow"])) });
          return undefined;
        case "deny":
          return refusal(`The person declined to let {0} run “${title}”.`, whoOf(call.connection));
        case "closing":
          return refusal(`The tab closed before the person answered; “${title}” was not run.`);
        case "moot":
          return refusal(`The call ended before the person answered; “${title}” was not run.`);
      }
    }
  }

  private ask(confirmer: Confirmer, call: ToolCall, tool: ToolDeclaration, kinds: readonly PermissionKind[], estimate: number | undefined, detail: string | undefined) {
    return new Promise<Ending>((resolve) => {
      const over = new AbortController();
      let asked = false;
      const pending: Pending = {
        question: {
          id: call.id, connection: call.connection, who: whoOf(call.connection, messages().anAgent),
          tool: tool.name, action: call.action, title: titleOf(tool, call.action),
          arguments: call.arguments, details: detailsOf(call.arguments),
          kinds, stage: detail === undefined ? "start" : "handler",
          // The handler's own sentence (ToolCall.confirm) leads the why.
          reasons: [...(detail ? [detail] : []), ...reasonsOf(kinds, estimate)],
          turn: call.turn, signal: over.signal,
          showing: () => {
            if (!asked && !over.signal.aborted) (asked = true), call.asking();
          },
        },
        settle: (answer) => {
          if (!this.pending.delete(pending)) return;
          this.emit(this.questionListeners);
          call.signal.removeEventListener("abort", moot);
          if (asked) call.answered();
          over.abort();
          resolve(answer);
        },
        // A change of the settings may have decided the question (another card's "This connection", another tab, the switch).
        recheck: () =>
          (this.summariesOnly && !!this.scope.refusal(tool, call.arguments)) || this.decisionFor(tool, call.action, call.connection.id, estimate).setting !== "ask",
      };
      const moot = () => pending.settle("moot");
      if (call.signal.aborted) return resolve("moot");
      call.signal.addEventListener("abort", moot);
      this.pending.add(pending);
      this.emit(this.questionListeners);
      Promise.resolve()
        .then(() => confirmer(pending.question))
        .then((a) => pending.settle(isAnswer(a) ? a : "deny"), () => pending.settle("deny"));
    });
  }

  private estimate(tool: ToolDeclaration, call: ToolCall): number | undefined {
    const fn = (this.options.estimates as Readonly<Record<string, Estimate | undefined>> | undefined)?.[tool.name];
    if (!fn || !permissionKindsOf(tool, call.action).includes("heavy")) return undefined;
    try {
      const ms = fn({ action: call.action, arguments: call.arguments });
      return typeof ms === "number" && Number.isFinite(ms) ? ms : undefined;
    } catch {
      return undefined;
    }
  }

  private load(): Stored {
    const kinds: Partial<Record<PermissionKind, Setting>> = {};
    let summariesOnly = this.stored?.summariesOnly ?? false;
    try {
      const raw = this.env.storage?.getItem(this.key);
      const v: unknown = raw ? JSON.parse(raw) : undefined;
      if (v && typeof v === "object") {
        const o = v as { kinds?: Record<string, unknown>; summariesOnly?: unknown };
        for (const kind of PERMISSION_KINDS) {
          const s = o.kinds?.[kind];
          if (s === "ask" || s === "allow" || s === "deny") kinds[kind] = s;
        }
        summariesOnly = o.summariesOnly === true;
      } else if (this.stored) {
        return this.stored; // nothing stored (cleared, or a browser that keeps none): keep the page's own
      }
    } catch {
      // Unreadable: the defaults.
    }
    return { kinds, summariesOnly };
  }

  /** save merges change into what is stored (another tab may have written since) and keeps it for the page when it cannot. */
  private save(change: Pick<Stored, "kinds">): void {
    const fresh = this.load();
    this.stored = { kinds: { ...fresh.kinds, ...change.kinds }, summariesOnly: fresh.summariesOnly };
    try {
      this.env.storage?.setItem(this.key, JSON.stringify(this.stored));
    } catch {
      // A full or refusing storage: the setting holds for this page.
    }
    this.changed(true);
  }

  private changed(mine: boolean): void {
    // Any document's, not only the one shown: another tab may turn on the switch of a document this tab ran calls on.
    const on = this.scope.onKeys();
    if (on.some((k) => !this.wasOn.has(k))) this.emit(this.withholdListeners);
    this.wasOn = new Set(on);
    for (const p of [...this.pending]) if (p.recheck()) p.settle("reconsider");
    this.emit(this.listeners, mine);
  }

  private emit(listeners: Set<(mine: boolean) => void>, mine = true): void {
    for (const listener of [...listeners]) {
      try {
        listener(mine);
      } catch (err) {
        console.warn("tabrelay: a permissions listener threw", err);
      }
    }
  }
}

function isAnswer(a: unknown): a is Answer {
  return a === "once" || a === "connection" || a === "always" || a === "deny";
}

/** confirmAtOf returns when a call of tool (and action) asks the person: "start" or "handler" (ToolCall.confirm). */
function confirmAtOf(tool: ToolDeclaration, action?: string): ConfirmAt {
  return tool.actions?.find((a) => a.name === action)?.confirmAt ?? tool.confirmAt ?? "start";
}

/** titleOf names a call for the person: the tool's title, and its action. */
export function titleOf(tool: ToolDeclaration, action: string | undefined): string {
  const title = tool.title?.trim() || tool.name;
  return action ? `${title} (${action})` : title;
}

const MAX_DETAILS = 4000;

function detailsOf(args: Readonly<Record<string, unknown>>): string {
  const m = messages().confirm;
  let text: string;
  try {
    text = JSON.stringify(args, null, 2) ?? "{}";
  } catch {
    text = m.unshowable;
  }
  return text.length > MAX_DETAILS ? text.slice(0, MAX_DETAILS) + m.more(text.length - MAX_DETAILS) : text;
}

/** reasonsOf says why each kind is asked about; heavy work with an estimate says how long. */
function reasonsOf(kinds: readonly PermissionKind[], estimate: number | undefined): string[] {
  const m = messages().permissions;
  return kinds.map((k) => (k === "heavy" && estimate !== undefined ? m.heavyAbout(Math.round(estimate / 1000)) : m.kinds[k].reason));
}

/** defaultPermissionsEnvironment reads the page's localStorage and events, where they exist. */
export function defaultPermissionsEnvironment(): PermissionsEnvironment {
  const w = typeof window === "undefined" ? undefined : window;
  let storage: StorageLike | null = null;
  try {
    storage = w?.localStorage ?? null;
  } catch {
    // Site data blocked.
  }
  return {
    storage,
    onStorage(listener) {
      const on = (e: StorageEvent) => e.storageArea === storage && listener(e.key);
      w?.addEventListener("storage", on);
      return () => w?.removeEventListener("storage", on);
    },
    onPageHide(listener) {
      w?.addEventListener("pagehide", listener);
      return () => w?.removeEventListener("pagehide", listener);
    },
  };
}
