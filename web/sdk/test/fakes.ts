// Fakes of the browser for the tests: a scripted relay's sockets, a clock
// with timers that only move when a test says so, storage, locks shared by
// several simulated tabs, and the page's focus. They implement env.ts'
// interfaces, which is all the client sees of a browser.

import type { Environment, LocksLike, PageLike, SocketFactory, SocketLike, StorageLike, TimerId } from "../src/env.js";
import { TabClient, type ClientOptions } from "../src/client.js";
import type { AppDeclaration } from "../src/tools.js";
import type { PermissionsEnvironment } from "../src/ui/permissions-model.js";

/** flush lets every pending promise callback run. */
export function flush(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export class FakeClock {
  t = 1_767_225_600_000;
  private seq = 0;
  private timers: { at: number; seq: number; fn: () => void }[] = [];

  now = (): number => this.t;
  setTimeout = (fn: () => void, ms: number): TimerId => {
    const timer = { at: this.t + Math.max(0, ms), seq: ++this.seq, fn };
    this.timers.push(timer);
    return timer;
  };
  clearTimeout = (id: TimerId): void => {
    this.timers = this.timers.filter((t) => t !== id);
  };

  /** pending returns the delays of the timers still waiting, soonest first. */
  pending(): number[] {
    return this.timers.map((t) => t.at - this.t).sort((a, b) => a - b);
  }

  /** advance moves time on by ms, running each timer due on the way, in order. */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      await flush();
      const due = this.timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.t = due.at;
      due.fn();
    }
    this.t = end;
    await flush();
  }
}

/** FakeSocket is one socket of the scripted relay; the test plays the relay's side. */
export class FakeSocket implements SocketLike {
  readyState = 0;
  onopen: ((ev: unknown) => void) | null = null;
  onmessage: ((ev: { data: unknown }) => void) | null = null;
  onclose: ((ev: { code: number; reason: string }) => void) | null = null;
  onerror: ((ev: unknown) => void) | null = null;
  readonly frames: string[] = [];
  closedByTab: number | undefined;

  constructor(readonly url: string) {}

  send(data: string): void {
    if (this.readyState !== 1) throw new Error("InvalidStateError: not open");
    this.frames.push(data);
  }

  close(code?: number): void {
    this.closedByTab = code ?? 1005;
    this.readyState = 3;
  }

  /** sent returns the messages the tab sent, parsed; of a type when given. */
  sent(type?: string): Record<string, unknown>[] {
    const all = this.frames.map((f) => JSON.parse(f) as Record<string, unknown>);
    return type ? all.filter((m) => m["type"] === type) : all;
  }

  open(): void {
    this.readyState = 1;
    this.onopen?.({});
  }

  /** receive delivers a frame from the relay: an object is sent as JSON. */
  receive(msg: unknown): void {
    this.onmessage?.({ data: typeof msg === "string" ? msg : JSON.stringify(msg) });
  }

  /** welcome opens the socket and welcomes its hello. */
  welcome(pingIntervalMs = 25_000): void {
    this.open();
    this.receive({ type: "welcome", protocol: 1, pairing: "ptest", pingIntervalMs, maxMessageBytes: 16 << 20 });
  }

  /** end closes the socket from the relay's side (code 1006: no close frame). */
  end(code = 1006, reason = ""): void {
    this.readyState = 3;
    this.onclose?.({ code, reason });
  }
}

/** FakeRelay hands out the sockets the tab dials, in order. */
export class FakeRelay {
  readonly sockets: FakeSocket[] = [];
  readonly WebSocket: SocketFactory;

  constructor() {
    const sockets = this.sockets;
    this.WebSocket = class extends FakeSocket {
      constructor(url: string) {
        super(url);
        sockets.push(this);
      }
    };
  }

  get last(): FakeSocket {
    const s = this.sockets[this.sockets.length - 1];
    if (!s) throw new Error("the tab dialed no socket");
    return s;
  }
}

/** MemoryStorage is a Storage; quota (characters) makes a write fail past it, as a full localStorage does. */
export class MemoryStorage implements StorageLike {
  readonly items = new Map<string, string>();
  constructor(private readonly quota = Infinity) {}
  get length(): number {
    return this.items.size;
  }
  key(i: number): string | null {
    return [...this.items.keys()][i] ?? null;
  }
  getItem(key: string): string | null {
    return this.items.get(key) ?? null;
  }
  setItem(key: string, value: string): void {
    let size = key.length + value.length;
    for (const [k, v] of this.items) if (k !== key) size += k.length + v.length;
    if (size > this.quota) throw new Error("QuotaExceededError");
    this.items.set(key, value);
  }
  removeItem(key: string): void {
    this.items.delete(key);
  }
}

/** SharedLocks is the browser's lock manager; each tab gets its own view with forTab. */
export class SharedLocks {
  private readonly held = new Map<string, string>();

  forTab(tab: string): LocksLike {
    return {
      request: async <T>(name: string, _o: { ifAvailable: true }, cb: (lock: unknown) => Promise<T> | T): Promise<T> => {
        if (this.held.has(name)) return cb(null);
        this.held.set(name, tab);
        try {
          return await cb({ name });
        } finally {
          if (this.held.get(name) === tab) this.held.delete(name);
        }
      },
    };
  }

  /** closeTab releases the locks of a tab that closed: the browser does that. */
  closeTab(tab: string): void {
    for (const [name, owner] of this.held) if (owner === tab) this.held.delete(name);
  }
}

export class FakePage implements PageLike {
  focused = false;
  private listener: (() => void) | undefined;
  hasFocus(): boolean {
    return this.focused;
  }
  onFocus(listener: () => void): () => void {
    this.listener = listener;
    return () => (this.listener = undefined);
  }
  private online: (() => void) | undefined;
  onOnline(listener: () => void): () => void {
    this.online = listener;
    return () => (this.online = undefined);
  }
  /** goOnline plays the browser's network coming back. */
  goOnline(): void {
    this.online?.();
  }
  /** focus plays the person clicking into the tab. */
  focus(): void {
    this.focused = true;
    this.listener?.();
  }
}

/** The browser a simulated tab runs in: several tabs may share its storage and locks. */
export class FakeBrowser {
  readonly clock = new FakeClock();
  readonly local = new MemoryStorage();
  readonly locks = new SharedLocks();
  warnings: string[] = [];
  private tabs = 0;
  private draws = 0;

  /** tab makes one page load of the app: its own relay sockets, session storage and page. */
  tab<A extends AppDeclaration>(options: Omit<ClientOptions<A>, "relay" | "environment">, extra: Partial<Environment> = {}) {
    const name = "tab" + ++this.tabs;
    const relay = new FakeRelay();
    const page = new FakePage();
    const env: Partial<Environment> = {
      WebSocket: relay.WebSocket,
      now: this.clock.now, setTimeout: this.clock.setTimeout, clearTimeout: this.clock.clearTimeout,
      random: () => 0.5,
      randomBytes: (b) => b.forEach((_, i) => (b[i] = (i * 7 + ++this.draws) & 0xff)),
      localStorage: this.local,
      locks: this.locks.forTab(name),
      page,
      warn: (m) => this.warnings.push(m),
      ...extra,
    };
    const client = new TabClient({ relay: "https://relay.test", environment: env, ...options });
    return { name, client, relay, page, env };
  }
}

/** A browser's storage and events, shared by the permissions of several simulated tabs. */
export class FakeSite {
  readonly storage = new MemoryStorage();
  private readonly watchers: ((key: string | null) => void)[] = [];
  private hides: (() => void)[] = [];

  env(): PermissionsEnvironment {
    let mine: ((key: string | null) => void) | undefined;
    return {
      storage: {
        get length() { return 0; },
        key: () => null,
        getItem: (k) => this.storage.getItem(k),
        setItem: (k, v) => {
          this.storage.setItem(k, v);
          // A storage event reaches the browser's other tabs, not the writer.
          for (const w of this.watchers) if (w !== mine) w(k);
        },
        removeItem: (k) => this.storage.removeItem(k),
      },
      onStorage: (l) => (this.watchers.push((mine = l)), () => {}),
      onPageHide: (l) => (this.hides.push(l), () => {}),
    };
  }

  closeTab(): void {
    this.hides.forEach((h) => h());
  }
}
