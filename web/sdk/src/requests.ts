// The tab's requests with `ref` (docs/tab-protocol.md §7 "Requests with
// ref", §8): connect-info, approve, decline, list-connections, forget and
// set-scope. Each is a promise matched to its answer by a fresh ref. A
// request made while the tab has no welcomed socket waits for the next
// welcome (bounded); one whose socket ends before the answer is rejected
// with a sentence saying it may or may not have been done.

import type { Environment, TimerId } from "./env.js";
import type { Answer, ConnectInfoMessage, ConnectionsMessage, DoneMessage, ErrorMessage } from "./frames.js";
import { isRecord, loose, num, text } from "./protocol.js";
import type { WireConnectInfo, WireConnectionInfo, WireRequestMessage, WireScopeEntry, WireTabMessage } from "./wire.js";

type RequestType = WireRequestMessage["type"];

/**
 * RequestOf is the request of type K as its sender writes it, typed by the
 * relay's own (wire.ts): the ref is the Requests'.
 */
export type RequestOf<K extends RequestType> = Of<WireRequestMessage, K>;
type Of<M, K> = M extends { type: infer T } ? (K extends T ? Omit<M, "type" | "ref"> & { type: K } : never) : never;

/** The answer each request gets (§7): connect-info its own, list-connections a connections list, the others done. */
export type AnswerTo<K extends RequestType> = K extends "connect-info" ? ConnectInfoMessage : K extends "list-connections" ? ConnectionsMessage : DoneMessage;

const answerType = (k: RequestType): Answer["type"] => (k === "connect-info" ? k : k === "list-connections" ? "connections" : "done");

/** One entry of a connection's scope (§7): a tool, and its actions ("*": all of them). */
export interface ScopeEntry {
  tool: string;
  /** Left out means ["*"]; an empty list is refused by the relay in an approve. */
  actions?: string[];
}

/** A connection of this browser, as the relay keeps it (§7 `done`). */
export interface ConnectionInfo {
  id: string;
  client: string;
  host: string;
  createdAt: number;
  lastUsedAt: number;
  scope: ScopeEntry[];
  /** The connection a derived one (a host's sub-agent, by token exchange) was made from; absent for one a person approved. */
  parentId?: string;
}

/** Who waits behind a connect code (§8 step 3). */
export interface ConnectInfo {
  /** The client's name. */
  client: string;
  /** "metadata-document": the name is what clientUrl's site publishes; "registered": the client named itself. */
  clientKind: string;
  /** The metadata document's URL ("" for a registered client). */
  clientUrl: string;
  /** The host the authorization says it returns to, in ASCII (punycode): not who gets the connection, which is whoever holds the waiting page. */
  redirectHost: string;
  /** A label of redirectHost mixes scripts (Latin with Cyrillic…), as look-alike names do. */
  redirectHostMixedScript: boolean;
  /** What the host asked for, as entries of the bundle; null when it asked for nothing. */
  requestedScope: ScopeEntry[] | null;
  /** When the code expires, Unix ms (relay clock). */
  expiresAt: number;
  /** When the waiting page was opened, Unix ms (relay clock). */
  startedAt: number;
  /** The browser family and system the waiting page's request named ("Chrome on Linux"); "" when none. A User-Agent can lie. */
  device: string;
  /** The waiting page's request came from this tab's network address (the relay compares; no address is sent). */
  sameAddress: boolean;
  /** Typed codes are accepted (false: the operator allows the approval link only). */
  crossDevice: boolean;
  /** "pending" for a code to decide; for a code this browser decided: "confirming", "approved", "declined" or "expired". */
  state: string;
  /** With "declined": "other-browser" when the confirm page ran in a browser that did not open the waiting page. */
  reason: string;
  /** With "approved": the connection made, when it is still live. */
  connection?: ConnectionInfo;
}

/**
 * RelayError is how a request fails: code is the relay's (§7 `error`:
 * wrong-code, code-used, code-expired, limited, invalid-scope, not-found,
 * unavailable, unsupported…) or the SDK's own: not-connected (no welcome in
 * time, the request was not sent), lost (the socket ended before the
 * answer: it may or may not have been done), no-answer, stopped.
 */
export class RelayError extends Error {
  override readonly name = "RelayError";
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

/** How long a request waits for a welcomed socket before it is rejected unsent. */
export const REQUEST_WAIT_MS = 15_000;
/** How long a sent request waits for its answer (the relay gives up after 10 s and says so). */
export const REQUEST_ANSWER_MS = 30_000;

export const REQUEST_MESSAGES = {
  "not-connected": "The relay could not be reached in time, so the request was not sent. Try again in a moment.",
  lost: "The connection to the relay ended before it answered, so this may or may not have been done. The list of connections tells, once the tab is connected again.",
  "no-answer": "The relay did not answer in time, so this may or may not have been done. The list of connections tells.",
} as const;

interface Pending {
  msg: WireRequestMessage;
  sent: boolean;
  timer: TimerId;
  answer: (a: Answer) => void;
  fail: (err: RelayError) => void;
}

/** Requests keeps the pending requests of one client. */
export class Requests {
  private readonly pending = new Map<string, Pending>();
  private seq = 0;
  private readonly tag: string;

  constructor(
    private readonly env: Environment,
    /** send writes on the welcomed socket; false when there is none. */
    private readonly send: (msg: WireTabMessage) => boolean,
  ) {
    this.tag = Math.floor(env.random() * 36 ** 4).toString(36);
  }

  /** request sends msg with a fresh ref and resolves with what read makes of the relay's answer. */
  request<K extends RequestType, T>(msg: RequestOf<K>, read: (answer: AnswerTo<K>) => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const ref = `r${++this.seq}-${this.tag}`;
      const p: Pending = {
        // What RequestOf<K> and a ref make is a WireRequestMessage; tsc does not follow a generic K that far.
        msg: { ...msg, ref } as WireRequestMessage,
        sent: false,
        timer: undefined,
        answer: (a) => {
          this.end(ref);
          try {
            resolve(read(a as AnswerTo<K>));
          } catch (err) {
            reject(err);
          }
        },
        fail: (err) => {
          this.end(ref);
          reject(err);
        },
      };
      this.pending.set(ref, p);
      p.timer = this.env.setTimeout(() => p.fail(new RelayError("not-connected", REQUEST_MESSAGES["not-connected"])), REQUEST_WAIT_MS);
      this.trySend(p);
    });
  }

  /** welcomed sends the requests that waited for a socket. */
  welcomed(): void {
    for (const p of [...this.pending.values()]) if (!p.sent) this.trySend(p);
  }

  /** socketEnded rejects the requests sent on the socket that ended: they may or may not have been done (§7). */
  socketEnded(): void {
    for (const p of [...this.pending.values()]) if (p.sent) p.fail(new RelayError("lost", REQUEST_MESSAGES.lost));
  }

  /** stopped rejects every request: the client stopped for good (until start), with its sentence. */
  stopped(message: string): void {
    this.socketEnded();
    for (const p of [...this.pending.values()]) p.fail(new RelayError("stopped", message));
  }

  /** onAnswer takes a done, connections or connect-info; false when no request waits for it (its ref, that type of answer). */
  onAnswer(a: Answer): boolean {
    const p = a.ref === undefined ? undefined : this.pending.get(a.ref);
    if (!p || answerType(p.msg.type) !== a.type) return false;
    p.answer(a);
    return true;
  }

  /** onError takes an error; false when it names no pending request. */
  onError(e: ErrorMessage): boolean {
    const p = e.ref === undefined ? undefined : this.pending.get(e.ref);
    if (!p) return false;
    p.fail(new RelayError(e.code, e.message || `The relay refused the request (${e.code}).`));
    return true;
  }

  private trySend(p: Pending): void {
    if (!this.send(p.msg)) return;
    p.sent = true;
    this.env.clearTimeout(p.timer);
    p.timer = this.env.setTimeout(() => p.fail(new RelayError("no-answer", REQUEST_MESSAGES["no-answer"])), REQUEST_ANSWER_MS);
  }

  private end(ref: string): void {
    const p = this.pending.get(ref);
    if (!p) return;
    this.env.clearTimeout(p.timer);
    this.pending.delete(ref);
  }
}

/** checkScope returns why scope cannot be sent ("" when it can): a field of the wrong JSON type closes the socket (§7). */
export function checkScope(scope: unknown, mayBeEmpty: boolean): string {
  if (!Array.isArray(scope)) return "The scope must be a list of tools.";
  if (!mayBeEmpty && scope.length === 0) return "Choose at least one tool.";
  for (const e of scope) {
    if (!isRecord(e) || typeof e["tool"] !== "string" || !e["tool"]) return "Each scope entry names a tool.";
    const a = e["actions"];
    if (a !== undefined && (!Array.isArray(a) || a.length === 0 || a.some((x) => typeof x !== "string"))) {
      return `The actions of ${e["tool"]} must be a list of at least one action.`;
    }
  }
  return "";
}


export function scopeOf(v: unknown): ScopeEntry[] {
  if (!Array.isArray(v)) return [];
  return v.filter(isRecord).map((r) => {
    const e = loose<WireScopeEntry>(r);
    const actions = Array.isArray(e.actions) ? e.actions.filter((a): a is string => typeof a === "string") : undefined;
    return actions ? { tool: text(e.tool), actions } : { tool: text(e.tool) };
  });
}

export function connectionInfoOf(v: unknown): ConnectionInfo {
  const c = loose<WireConnectionInfo>(v);
  const parentId = text(c.parentId);
  return {
    id: text(c.id), client: text(c.client), host: text(c.host),
    createdAt: num(c.createdAt), lastUsedAt: num(c.lastUsedAt), scope: scopeOf(c.scope),
    ...(parentId ? { parentId } : {}),
  };
}

export function connectInfoOf(v: unknown): ConnectInfo {
  const m = loose<WireConnectInfo>(v);
  return {
    client: text(m.client), clientKind: text(m.clientKind), clientUrl: text(m.clientUrl),
    redirectHost: text(m.redirectHost), redirectHostMixedScript: m.redirectHostMixedScript === true,
    requestedScope: Array.isArray(m.requestedScope) ? scopeOf(m.requestedScope) : null,
    expiresAt: num(m.expiresAt), startedAt: num(m.startedAt), device: text(m.device),
    // An older relay says nothing of these: typed codes were all it had.
    sameAddress: m.sameAddress === true, crossDevice: m.crossDevice !== false,
    state: text(m.state) || "pending", reason: text(m.reason),
    ...(isRecord(m.connection) ? { connection: connectionInfoOf(m.connection) } : {}),
  };
}

/** The fragment parameter a relay's waiting page links with (§8 step 2). */
export const CONNECT_FRAGMENT = "tabrelay-connect";

/** The parts of window takeConnectCode uses. */
export interface LocationLike {
  location: { readonly href: string; readonly hash: string };
  history: { readonly state: unknown; replaceState(data: unknown, unused: string, url?: string): void };
}

/**
 * takeConnectCode reads the connect code of a `#tabrelay-connect=CODE`
 * fragment and removes it from the address bar (history.replaceState), so
 * it stays in no history entry or bookmark (§8 step 2). Other parts of
 * the fragment stay. It returns null when the fragment carries no code.
 * Call it once, on load — not on hashchange: a page of another origin
 * that opened this one can change its fragment as often as it likes.
 */
export function takeConnectCode(win: LocationLike = globalThis as unknown as LocationLike): string | null {
  const hash = win.location.hash.replace(/^#/, "");
  if (!hash) return null;
  let code: string | null = null;
  const rest = hash.split("&").filter((part) => {
    const [name = "", ...value] = part.split("=");
    if (safeDecode(name) !== CONNECT_FRAGMENT) return true;
    code ??= safeDecode(value.join("=")).trim();
    return false;
  });
  if (code === null) return null;
  const base = win.location.href.replace(/#.*$/, "");
  try {
    win.history.replaceState(win.history.state, "", rest.length ? base + "#" + rest.join("&") : base);
  } catch {
    // A sandboxed document may refuse; the code is read all the same.
  }
  return code || null;
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, " "));
  } catch {
    return s;
  }
}
