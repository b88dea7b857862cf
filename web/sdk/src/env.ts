// Everything the client takes from the browser, behind small interfaces so
// that tests can hand it a fake socket, clock, storage and locks
// (test/fakes.ts). defaultEnvironment reads the real ones, lazily: the
// module itself touches no browser global, so node can import it (the
// bundle generator does).

/** The part of a WebSocket the client uses. */
export interface SocketLike {
  readonly readyState: number;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  send(data: string): void;
  close(code?: number, reason?: string): void;
}

export type SocketFactory = new (url: string) => SocketLike;

/** WebSocket.OPEN: the only state in which send works. */
export const SOCKET_OPEN = 1;

/** The part of Storage (localStorage) the client uses. */
export interface StorageLike {
  readonly length: number;
  key(index: number): string | null;
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** The part of the Web Locks API (navigator.locks) the at-most-once record uses. */
export interface LocksLike {
  request<T>(
    name: string,
    options: { ifAvailable: true },
    callback: (lock: unknown) => Promise<T> | T,
  ): Promise<T>;
}

/** The page's signals: focus, visibilitychange to visible, pageshow (§11), and the network's return. */
export interface PageLike {
  /** hasFocus reports whether the person is looking at this tab now. */
  hasFocus(): boolean;
  /** onFocus calls listener each time the person focuses the tab; it returns the unsubscribe. */
  onFocus(listener: () => void): () => void;
  /** onOnline calls listener each time the browser's network comes back; it returns the unsubscribe. */
  onOnline(listener: () => void): () => void;
}

export type TimerId = unknown;

export interface Environment {
  WebSocket: SocketFactory;
  /** Unix ms. */
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerId;
  clearTimeout(id: TimerId): void;
  /** A number in [0, 1), for the back-off's jitter. */
  random(): number;
  /**
   * Fills bytes from a cryptographic source (crypto.getRandomValues). A
   * plain Uint8Array, not Uint8Array<ArrayBuffer>: TypeScript before 5.7,
   * which a consumer may use, has no such generic (issue 26).
   */
  randomBytes(bytes: Uint8Array): void;
  /** null when the browser keeps no usable local storage. */
  localStorage: StorageLike | null;
  /** null where the Web Locks API is missing (it needs a secure context). */
  locks: LocksLike | null;
  /** null outside a page (node, workers). */
  page: PageLike | null;
  warn(message: string, detail?: unknown): void;
}

/** defaultEnvironment reads the browser's own globals, each where it exists. */
export function defaultEnvironment(): Environment {
  const g = globalThis as typeof globalThis & { navigator?: { locks?: LocksLike } };
  return {
    WebSocket: g.WebSocket as unknown as SocketFactory,
    now: () => Date.now(),
    setTimeout: (fn, ms) => g.setTimeout(fn, ms),
    clearTimeout: (id) => g.clearTimeout(id as ReturnType<typeof setTimeout>),
    random: Math.random,
    // The SDK hands it only its own new Uint8Array(n), never a shared buffer's view.
    randomBytes: (bytes) => g.crypto.getRandomValues(bytes as Uint8Array<ArrayBuffer>),
    localStorage: usableStorage(() => g.localStorage),
    locks: g.navigator?.locks ?? null,
    page: typeof document === "undefined" ? null : browserPage(),
    warn: (message, detail) => console.warn("tabrelay: " + message, detail ?? ""),
  };
}

/**
 * usableStorage returns the storage when a write to it works. Reading
 * window.localStorage throws where site data is blocked, and a full or
 * private-mode storage may refuse every write: both count as none.
 */
export function usableStorage(get: () => StorageLike | undefined): StorageLike | null {
  try {
    const s = get();
    if (!s) return null;
    const probe = "tabrelay:probe";
    s.setItem(probe, "1");
    s.removeItem(probe);
    return s;
  } catch {
    return null;
  }
}

function browserPage(): PageLike {
  return {
    hasFocus: () => document.visibilityState === "visible" && document.hasFocus(),
    onFocus(listener) {
      const whenVisible = () => {
        if (document.visibilityState === "visible") listener();
      };
      // pageshow: a page restored from the back/forward cache is looked at
      // again without a focus event.
      window.addEventListener("focus", listener);
      document.addEventListener("visibilitychange", whenVisible);
      window.addEventListener("pageshow", whenVisible);
      return () => {
        window.removeEventListener("focus", listener);
        document.removeEventListener("visibilitychange", whenVisible);
        window.removeEventListener("pageshow", whenVisible);
      };
    },
    onOnline(listener) {
      window.addEventListener("online", listener);
      return () => window.removeEventListener("online", listener);
    },
  };
}
