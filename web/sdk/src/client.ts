// TabClient: one page's connection to the relay (docs/tab-protocol.md).
// It owns the socket's life — hello, welcome, pongs, the silence watchdog,
// drain, the reconnect rule of §15, stop codes — and the status the app
// watches. Calls are Calls' business; the reconnect arithmetic is
// backoff.ts'; the secret and tab id are identity.ts'.

import { jitteredWaitMs, retryInMs, MAX_BACKOFF_MS, Retries } from "./backoff.js";
import { Calls, checkHandlers, type CallGate, type Handlers, type OnlyDeclared } from "./calls.js";
import { CLOSE_REPLACED, STOP_MESSAGES, stopReasonOf, type StopReason } from "./codes.js";
import { defaultEnvironment, SOCKET_OPEN, type Environment, type SocketLike, type StorageLike, type TimerId } from "./env.js";
import { forgetSecret, loadOrCreateSecret, TabId } from "./identity.js";
import { parseFrame, type DoneMessage, type PermissionsQueryMessage, type WelcomeMessage } from "./frames.js";
import { MAX_MESSAGE_BYTES, PROTOCOL_VERSION, type WireHello, type WireRequestMessage, type WireScopeEntry, type WireTabMessage } from "./wire.js";
import { overBytes, type Connection, type Permission } from "./protocol.js";
import { CallRecord } from "./record.js";
import {
  checkScope, RelayError, Requests,
  type AnswerTo, type RequestOf, type ConnectInfo, type ConnectionInfo, type ScopeEntry,
} from "./requests.js";
import { checkApp, type AppDeclaration } from "./tools.js";

/** What the app can show of the connection. */
export type Status =
  | { readonly state: "idle" }
  | { readonly state: "connecting" }
  | { readonly state: "connected"; readonly pairing: string }
  /** Waiting before the next try: retryAt is Unix ms, seconds the wait rounded up. */
  | { readonly state: "reconnecting"; readonly retryAt: number; readonly seconds: number; readonly code: number }
  /** For good, until start() is called again: message is a sentence for the person. */
  | { readonly state: "stopped"; readonly why: StopReason; readonly message: string; readonly code?: number };

/** A relay's question before it lists the tools to a host (§7 `permissions-query`). */
export interface PermissionsQuery {
  readonly connection: Connection;
  readonly tools: readonly string[];
}

/** What the answers to permissions-query come from: a function, or the person's permissions (createPermissions). */
export type PermissionsAnswer = (query: PermissionsQuery) => Readonly<Record<string, Permission>>;

/** The person's permissions as the client uses them: they answer queries, gate calls and say when they change. */
export interface PermissionsGate extends CallGate {
  answer: PermissionsAnswer;
  /** onChange calls listener at each change; mine false: another tab made it, and announced it itself. */
  onChange(listener: (mine?: boolean) => void): () => void;
  /** onStep, when given, calls listener when the person ends an agent's turn (Stop): the client sends a step by the person (§12). */
  onStep?(listener: () => void): () => void;
}

export interface ClientOptions<A extends AppDeclaration, H = Handlers<A>> {
  /** The relay's address: https://relay.example.com (the socket is its /tab), or a ws(s):// URL used as it is. */
  relay: string;
  /** The app's tools, from defineApp. */
  app: A;
  /** One handler (or one per action) for every declared tool, typed by its inputSchema (Handlers). */
  handlers: H;
  /**
   * permissions answers the relay's permissions-query: what the person's
   * settings make of each tool for that connection, at once. Given the
   * person's permissions (createPermissions), they also decide every call
   * and announce their changes. Without it, every tool is "unknown".
   */
  permissions?: PermissionsAnswer | PermissionsGate;
  /** The prefix of the storage keys (`<prefix>:secret`, `<prefix>:call:<id>`); "tabrelay". */
  storagePrefix?: string;
  /** Calls whose arguments exceed this many bytes are refused with an error result; 1 MiB. */
  maxArgumentBytes?: number;
  /** How long a tab waits for another tab's result of a call before saying it runs there; 5000 ms. */
  waitForOtherTabMs?: number;
  /** Replaces parts of the browser (tests, or a page that wraps WebSocket). */
  environment?: Partial<Environment>;
}

const DEFAULT_PING_INTERVAL_MS = 25_000;
/** The relay closes silent tabs after two intervals; the tab gives up after three (§13). */
const MISSED_PINGS = 3;
/** How long a socket may take from the dial to its welcome (the relay's hello deadline is 10 s). */
const WELCOME_TIMEOUT_MS = 20_000;
/** A drain's delay is bounded: a garbled one must not park the tab for hours. */
const MAX_DRAIN_MS = 3 * MAX_BACKOFF_MS;
const OUTBOX_MAX = 1000;

/** One socket: one try (§15). */
interface Socket {
  ws: SocketLike;
  welcomedAt: number | undefined;
  /** The drain's delay, or -1 before any drain. */
  drainMs: number;
  lastHeard: number;
  silenceMs: number;
  watchdog: TimerId;
}

/** The handlers a client takes: every declared tool's, none other, each returning JSON. */
type CheckedHandlers<A extends AppDeclaration, H> = Handlers<A, H> & OnlyDeclared<A, H>;

export class TabClient<const A extends AppDeclaration, H = Handlers<A>> {
  private readonly env: Environment;
  private readonly url: string;
  private readonly prefix: string;
  private readonly retries = new Retries();
  private readonly listeners = new Set<(s: Status) => void>();
  private readonly outbox: WireTabMessage[] = [];
  private readonly warned = new Set<string>();
  private current: Status = { state: "idle" };
  private sock: Socket | undefined;
  private retryTimer: TimerId | undefined;
  private storage: StorageLike | null = null;
  private secret = "";
  private tab: TabId | undefined;
  private calls: Calls<A> | undefined;
  private watchingFocus = false;
  private focusedAt = 0;
  private dials = 0;
  private maxBytes = MAX_MESSAGE_BYTES;
  private pairingId = "";
  /** A permissions-changed waits for the next welcome. */
  private permsDue = false;
  private readonly requests: Requests;
  private conns: ConnectionInfo[] | undefined;
  /** Pushed lists heard, and the count when each list-connections (by ref) went out: a later push is newer than its answer. */
  private pushes = 0;
  private readonly listAt = new Map<string | undefined, number>();
  private readonly connListeners = new Set<(list: readonly ConnectionInfo[]) => void>();

  constructor(private readonly options: ClientOptions<A, H> & { handlers: CheckedHandlers<A, H> }) {
    // Mistakes of the app's own code throw here, at once, not at a call.
    const problem = checkApp(options.app);
    if (problem) throw new TypeError("tabrelay: " + problem);
    checkHandlers(options.app, options.handlers);
    this.env = { ...defaultEnvironment(), ...options.environment };
    this.url = socketURL(options.relay);
    this.prefix = options.storagePrefix ?? "tabrelay";
    const p = options.permissions;
    if (typeof p === "object") p.onChange((mine) => mine === false || this.permissionsChanged()), p.onStep?.(() => this.step());
    this.requests = new Requests(this.env, (msg) => {
      const sock = this.sock;
      const sent = sock?.welcomedAt !== undefined && this.send(sock, msg);
      if (sent && msg.type === "list-connections") this.listAt.set(msg.ref, this.pushes);
      return sent;
    });
  }

  /** The status now. */
  get status(): Status {
    return this.current;
  }

  /** The pairing id of the last welcome ("" before it); not a secret. */
  get pairing(): string {
    return this.pairingId;
  }

  /** This page's tab id ("" before start). */
  get tabId(): string {
    return this.tab?.value ?? "";
  }

  /** The browser's live connections as last heard (a push or a listConnections answer); undefined until known. */
  get connections(): readonly ConnectionInfo[] | undefined {
    return this.conns;
  }

  /**
   * onConnections calls listener with the list now (once known) and with
   * every list heard after: each pushed `connections` and each
   * listConnections() answer. While anyone listens, every welcome asks
   * for the list. It returns the unsubscribe.
   */
  onConnections(listener: (list: readonly ConnectionInfo[]) => void): () => void {
    this.connListeners.add(listener);
    if (this.conns) this.safely(listener, this.conns);
    return () => this.connListeners.delete(listener);
  }

  /** onStatus calls listener with the status now and at each change; it returns the unsubscribe. */
  onStatus(listener: (s: Status) => void): () => void {
    this.listeners.add(listener);
    this.notify(listener);
    return () => this.listeners.delete(listener);
  }

  /** start connects, and keeps connecting until a stop code or stop(). Again after a stop, it starts anew. */
  start(): void {
    if (this.current.state !== "idle" && this.current.state !== "stopped") return;
    const env = this.env;
    this.storage = env.localStorage;
    try {
      if (!this.storage) return this.halt("no-storage");
      this.secret = loadOrCreateSecret(env, this.storage, this.prefix);
    } catch (err) {
      env.warn("the tab secret could not be kept", err); // a storage that took the probe but not the secret
      return this.halt("no-storage");
    }
    this.tab ??= new TabId(env);
    this.calls ??= new Calls({
      app: this.options.app, handlers: this.options.handlers, env,
      gate: typeof this.options.permissions === "object" ? this.options.permissions : undefined,
      record: new CallRecord(env, this.storage, this.prefix, this.options.waitForOtherTabMs ?? 5000),
      deliver: (msg, keep) => this.deliver(msg, keep),
      unsent: this.outbox,
      maxMessageBytes: () => this.maxBytes,
      maxArgumentBytes: this.options.maxArgumentBytes ?? 1024 * 1024,
    });
    if (env.page && !this.watchingFocus) {
      // Watched for the page's life: a stopped client only remembers the time for its next hello.
      this.watchingFocus = true;
      if (env.page.hasFocus()) this.focusedAt = env.now();
      env.page.onFocus(() => this.focus());
      env.page.onOnline(() => this.retryNow());
    }
    this.dial();
  }

  /** stop closes the socket and stays disconnected. Running calls go on; their results wait for a start(). */
  stop(): void {
    if (this.current.state !== "stopped") this.halt("stopped");
  }

  /** step tells the relay the person changed something in the app: it ends an agent's turn (§12). */
  step(): void {
    this.deliver({ type: "step", by: "person" }, true);
  }

  /** permissionsChanged tells the relay that what the person allows changed, so hosts list the tools anew; disconnected, once after the next welcome. */
  permissionsChanged(): void {
    const sock = this.sock;
    this.permsDue = !(sock?.welcomedAt !== undefined && this.send(sock, { type: "permissions-changed" }));
  }

  /** focus reports that the person looks at this tab now; the page's focus events call it already. */
  focus(): void {
    this.focusedAt = this.env.now();
    this.deliver({ type: "focus", at: this.focusedAt }, false); // the next hello carries it anyway
  }

  // The person's answers to connect codes and their connections (§7
  // "Requests with ref", §8). Each resolves with the relay's answer or
  // rejects with a RelayError: the relay's code and sentence, or the SDK's
  // own (not-connected, lost, no-answer, stopped). A request made while the
  // tab is not connected waits for the next welcome, up to 15 s.

  /** connectInfo asks who waits behind a connect code, before the person decides (§8 step 3). It uses nothing up. */
  connectInfo(code: string): Promise<ConnectInfo> {
    return this.codeRequest({ type: "connect-info", code }, (a) => a.info);
  }

  /**
   * approve grants the connection asking with a typed code the scope the
   * person chose; it resolves with the new connection. The relay cannot
   * tell who gets it (§8 step 5): say so, and ask twice, before calling it.
   */
  approve(code: string, scope: readonly ScopeEntry[]): Promise<ConnectionInfo> {
    return this.approveVia(code, scope, "typed", (a) => a.connection);
  }

  /**
   * approveLink approves a code that came with the approval link. It
   * resolves with the relay's confirm page (§7 `done.confirm`): open it as
   * a top-level window of this browser, which proves there that it opened
   * the waiting page; the connection is made only then. connectInfo(code)
   * tells the outcome (its state leaves "confirming"). A relay older than
   * link approvals answers "" (and has approved the code as typed).
   */
  approveLink(code: string, scope: readonly ScopeEntry[]): Promise<string> {
    return this.approveVia(code, scope, "link", (a) => a.confirm);
  }

  private approveVia<T>(code: string, scope: readonly ScopeEntry[], via: "typed" | "link", read: (a: DoneMessage) => T): Promise<T> {
    const bad = checkScope(scope, false);
    if (bad) return Promise.reject(new RelayError("invalid-scope", bad));
    return this.codeRequest({ type: "approve", code, scope: copyScope(scope), via }, read);
  }

  /** decline refuses the connection asking with code. */
  decline(code: string): Promise<void> {
    return this.codeRequest({ type: "decline", code }, () => undefined);
  }

  /** listConnections lists this browser's live connections. */
  listConnections(): Promise<ConnectionInfo[]> {
    return this.request({ type: "list-connections" }, (a) => {
      const at = this.listAt.get(a.ref);
      this.listAt.delete(a.ref);
      return this.conns && at !== undefined && at < this.pushes ? [...this.conns] : this.heard(a.connections ?? []);
    });
  }

  /** heard keeps a connections list (an answer or a push) and tells the listeners. */
  private heard(list: ConnectionInfo[]): ConnectionInfo[] {
    this.conns = list;
    for (const l of this.connListeners) this.safely(l, list);
    return list;
  }

  /** forget ends a connection: its tokens stop working at once. */
  forget(connection: string | { readonly id: string }): Promise<void> {
    const id = typeof connection === "string" ? connection : connection?.id;
    if (typeof id !== "string" || !id) return Promise.reject(new RelayError("not-found", "No connection was named."));
    return this.request({ type: "forget", connection: id }, () => undefined);
  }

  /** setScope replaces a connection's scope (an empty one leaves it no access); it resolves with the connection as it is now. */
  setScope(connection: string | { readonly id: string }, scope: readonly ScopeEntry[]): Promise<ConnectionInfo> {
    const id = typeof connection === "string" ? connection : connection?.id;
    if (typeof id !== "string" || !id) return Promise.reject(new RelayError("not-found", "No connection was named."));
    const bad = checkScope(scope, true);
    if (bad) return Promise.reject(new RelayError("invalid-scope", bad));
    return this.request({ type: "set-scope", connection: id, scope: copyScope(scope) }, (a) => a.connection);
  }

  private codeRequest<K extends "connect-info" | "approve" | "decline", T>(msg: RequestOf<K> & { code: string }, read: (a: AnswerTo<K>) => T): Promise<T> {
    const code: unknown = msg.code;
    // An empty code would count as a wrong one at the relay (§7): say so here.
    if (typeof code !== "string" || !code.trim()) {
      return Promise.reject(new RelayError("wrong-code", "Type the connect code that the application's page shows."));
    }
    return this.request(msg, read);
  }

  private request<K extends WireRequestMessage["type"], T>(msg: RequestOf<K>, read: (a: AnswerTo<K>) => T): Promise<T> {
    const s = this.current;
    if (s.state === "stopped") return Promise.reject(new RelayError("stopped", s.message));
    return this.requests.request(msg, read);
  }

  /**
   * retryNow ends the wait before the next try when the browser's network
   * comes back: the wait was for a network that is there again. The count
   * of failed tries stays, so a relay that is down still meets growing waits.
   */
  private retryNow(): void {
    if (this.current.state !== "reconnecting" || this.retryTimer === undefined) return;
    this.env.clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.dial();
  }

  private dial(): void {
    const env = this.env;
    this.setStatus({ state: "connecting" });
    let ws: SocketLike;
    try {
      ws = new env.WebSocket(this.url);
    } catch (err) {
      env.warn("the browser refused to open the relay's socket", err);
      return this.halt("bad-relay-url");
    }
    const sock: Socket = { ws, welcomedAt: undefined, drainMs: -1, lastHeard: env.now(), silenceMs: WELCOME_TIMEOUT_MS, watchdog: undefined };
    this.sock = sock;
    const reconnects = this.dials++;
    ws.onopen = () => {
      try {
        // Another tab may have made the browser's secret anew (a 4102, a race at the first start): send the stored one.
        this.secret = loadOrCreateSecret(env, this.storage!, this.prefix);
      } catch {
        // Keep the one read at start.
      }
      const hello: WireHello = { type: "hello", protocol: PROTOCOL_VERSION, secret: this.secret, tabId: this.tabId, bundle: this.options.app.version };
      if (this.focusedAt) hello.focusedAt = this.focusedAt;
      if (reconnects) hello.reconnects = reconnects;
      this.send(sock, hello);
    };
    ws.onmessage = (ev) => this.guarded(() => this.onFrame(sock, ev.data));
    ws.onclose = (ev) => this.guarded(() => this.ended(sock, ev.code, ev.reason));
    ws.onerror = () => {}; // a close event follows, with the code
    this.watch(sock);
  }

  /** watch gives up a socket that heard nothing for its silence limit (§13): its relay may be gone without a close. */
  private watch(sock: Socket): void {
    const check = () => {
      if (this.sock !== sock) return;
      const silent = this.env.now() - sock.lastHeard;
      if (silent < sock.silenceMs) {
        sock.watchdog = this.env.setTimeout(check, sock.silenceMs - silent);
        return;
      }
      this.env.warn(sock.welcomedAt === undefined ? "no welcome from the relay in time; reconnecting" : "the relay went silent; reconnecting");
      this.ended(sock, 1006);
    };
    sock.watchdog = this.env.setTimeout(check, sock.silenceMs);
  }

  private onFrame(sock: Socket, data: unknown): void {
    if (this.sock !== sock) return;
    sock.lastHeard = this.env.now();
    if (typeof data !== "string") return this.warnOnce("binary", "a binary frame from the relay was ignored");
    const msg = parseFrame(data);
    if (msg.type === "unreadable") return this.warnOnce(msg.why, msg.why);
    if (sock.welcomedAt === undefined && msg.type !== "welcome") {
      return this.warnOnce("early", `a "${msg.type}" before the welcome was ignored`);
    }
    switch (msg.type) {
      case "welcome":
        return this.onWelcome(sock, msg);
      case "ping":
        return void this.send(sock, { type: "pong" }); // straight from the handler: background timers lag (§13)
      case "call":
        return this.calls?.onCall(msg, data.length);
      case "cancel":
        return this.calls?.onCancel(msg);
      case "permissions-query":
        return this.answerPermissions(sock, msg);
      case "drain":
        // Leave the node now and come back after its delay (§14).
        sock.drainMs = Math.min(msg.reconnectAfterMs, MAX_DRAIN_MS);
        return this.ended(sock, 4000);
      case "error":
        if (this.requests.onError(msg)) return;
        return this.env.warn(`the relay answered with an error: ${msg.code}`, msg.message);
      case "done": case "connections": case "connect-info":
        if (msg.type === "connections" && msg.ref === undefined) {
          // A push (§7); one without a list is ignored, not taken for an empty one.
          if (msg.connections) this.pushes++, this.heard(msg.connections);
          return;
        }
        if (!this.requests.onAnswer(msg)) this.warnOnce("ref", `a "${msg.type}" answering no pending request was ignored`);
        return;
      case "scope":
        return; // reserved (§7)
    }
  }

  private onWelcome(sock: Socket, msg: WelcomeMessage): void {
    if (sock.welcomedAt !== undefined) return;
    sock.welcomedAt = this.env.now();
    // Bounded: a garbled interval must not make a busy timer (past 2^31 ms setTimeout fires at once) or a watchdog of 0.
    const interval = msg.pingIntervalMs ?? DEFAULT_PING_INTERVAL_MS;
    sock.silenceMs = MISSED_PINGS * Math.min(Math.max(interval, 1000), 300_000);
    this.env.clearTimeout(sock.watchdog);
    this.watch(sock); // from the welcome's limit, not the dial's
    this.maxBytes = Math.max(Math.min(msg.maxMessageBytes ?? MAX_MESSAGE_BYTES, MAX_MESSAGE_BYTES), 65536);
    this.pairingId = msg.pairing;
    // What waited for a socket goes first, in order (§15: results still unsent).
    while (this.outbox.length > 0) {
      if (!this.send(sock, this.outbox[0]!)) break;
      this.outbox.shift();
    }
    if (this.permsDue) this.permissionsChanged();
    this.setStatus({ state: "connected", pairing: this.pairingId });
    this.requests.welcomed();
    // A push lost with the last socket is made good (§7 `connections`).
    if (this.connListeners.size) this.listConnections().catch(() => {});
  }

  private answerPermissions(sock: Socket, { id, tools: names, connection }: PermissionsQueryMessage): void {
    const tools: Record<string, Permission> = {};
    const p = this.options.permissions;
    if (p) {
      try {
        const answer = (typeof p === "function" ? p : p.answer.bind(p))({ connection, tools: names });
        for (const name of names) {
          const p = answer[name];
          if (p === "asks" || p === "runs" || p === "refused") tools[name] = p;
        }
      } catch (err) {
        this.env.warn("the permissions option threw; the relay lists the tools without them", err);
      }
    }
    // Answered even when empty: the relay would otherwise wait 1.5 s for it (§6).
    this.send(sock, { type: "permissions", id, tools });
  }

  /** ended handles the end of a socket, however it ended: the relay's close, silence, or a drain. */
  private ended(sock: Socket, code: number, reason = ""): void {
    if (this.sock !== sock) return;
    this.abandon(sock);
    const stop = stopReasonOf(code);
    if (stop) {
      if (stop === "forgotten" && this.storage) forgetSecret(this.storage, this.prefix, this.secret);
      return this.halt(stop, code);
    }
    // 4008 on the socket this page uses: another socket has its tab id.
    // Taking the id back would loop (§16).
    if (code === CLOSE_REPLACED) this.tab?.renew();
    const welcomed = sock.welcomedAt !== undefined;
    const n = this.retries.after({
      welcomed, upMs: welcomed ? this.env.now() - sock.welcomedAt! : 0, drained: sock.drainMs >= 0,
    });
    // A close that says when to come back is waited out, plus the jitter: tabs refused together spread out (§15).
    const wait = sock.drainMs >= 0 ? sock.drainMs : retryInMs(reason) + jitteredWaitMs(n, this.env.random);
    this.retryTimer = this.env.setTimeout(() => {
      this.retryTimer = undefined;
      this.dial();
    }, wait);
    this.setStatus({ state: "reconnecting", retryAt: this.env.now() + wait, seconds: Math.ceil(wait / 1000), code });
  }

  /** abandon forgets a socket and closes it; its events are no longer heard. */
  private abandon(sock: Socket): void {
    this.env.clearTimeout(sock.watchdog);
    if (this.sock === sock) this.sock = undefined;
    // Requests sent on it may or may not have been done (§7).
    if (sock.welcomedAt !== undefined) this.requests.socketEnded();
    const ws = sock.ws;
    ws.onopen = ws.onmessage = ws.onclose = ws.onerror = null;
    try {
      ws.close(1000, "tab reconnects");
    } catch {
      // Closed already.
    }
  }

  private halt(why: StopReason, code?: number): void {
    if (this.sock) this.abandon(this.sock);
    if (this.retryTimer !== undefined) this.env.clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.setStatus({ state: "stopped", why, message: STOP_MESSAGES[why], ...(code ? { code } : {}) });
    this.requests.stopped(STOP_MESSAGES[why]);
  }

  /** deliver sends msg on the welcomed socket; keep: else it waits for the next welcome. */
  private deliver(msg: WireTabMessage, keep: boolean): void {
    const sock = this.sock;
    if (sock?.welcomedAt !== undefined && this.send(sock, msg)) return;
    if (!keep) return;
    if (this.outbox.length >= OUTBOX_MAX) {
      this.warnOnce("outbox", "too many messages wait for the relay; the oldest were dropped");
      this.outbox.shift();
    }
    this.outbox.push(msg);
  }

  /**
   * send writes one message; false when the socket cannot take it now. A
   * message over the relay's limit is dropped with a warning (and counts
   * as sent): the relay would close the socket with 1009, a stop code.
   */
  private send(sock: Socket, msg: WireTabMessage): boolean {
    if (sock.ws.readyState !== SOCKET_OPEN) return false;
    let frame: string;
    try {
      frame = JSON.stringify(msg);
    } catch (err) {
      this.env.warn(`a "${msg.type}" message is not JSON and was dropped`, err);
      return true;
    }
    if (overBytes(frame.length, this.maxBytes, () => frame)) {
      this.env.warn(`a "${msg.type}" message over ${this.maxBytes} bytes was dropped`);
      return true;
    }
    try {
      sock.ws.send(frame);
      return true;
    } catch {
      return false;
    }
  }

  private setStatus(s: Status): void {
    this.current = s;
    for (const listener of this.listeners) this.notify(listener);
  }

  private notify(listener: (s: Status) => void): void {
    this.safely(listener, this.current);
  }

  private safely<T>(listener: (v: T) => void, v: T): void {
    try {
      listener(v);
    } catch (err) {
      this.env.warn("a listener threw", err);
    }
  }

  /** guarded runs a socket event: nothing the relay sends may throw out of it and stop the client. */
  private guarded(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.env.warn("a relay message could not be handled", err);
    }
  }

  /** warnOnce warns once per kind: a relay that repeats a bad message must not flood the console. */
  private warnOnce(kind: string, message: string): void {
    if (this.warned.has(kind)) return;
    this.warned.add(kind);
    this.env.warn(message);
  }
}

/** connect makes a client and starts it: the quick start. */
export function connect<const A extends AppDeclaration, H extends CheckedHandlers<A, H>>(options: ClientOptions<A, H>): TabClient<A, H> {
  const client = new TabClient(options);
  client.start();
  return client;
}

/** socketURL returns the /tab WebSocket URL of a relay's address. */
export function socketURL(relay: string): string {
  let u: URL;
  try {
    u = new URL(relay.trim());
  } catch {
    throw new TypeError(`tabrelay: the relay address ${JSON.stringify(relay)} must look like https://relay.example.com`);
  }
  if (u.protocol === "ws:" || u.protocol === "wss:") return u.href;
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    throw new TypeError(`tabrelay: the relay address ${JSON.stringify(relay)} must start with https://, http://, wss:// or ws://`);
  }
  u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
  u.pathname = u.pathname.replace(/\/$/, "") + "/tab";
  return u.href;
}

/** copyScope is scope as the relay reads it (wire.ts: a renamed field fails tsc here). */
function copyScope(scope: readonly ScopeEntry[]): WireScopeEntry[] {
  return scope.map((e): WireScopeEntry => (e.actions ? { tool: e.tool, actions: [...e.actions] } : { tool: e.tool }));
}
