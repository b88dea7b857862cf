// The browser's tab secret and this page's tab id (docs/tab-protocol.md §1, §5).

import type { Environment, StorageLike } from "./env.js";

/** The storage key of the secret, under the client's storagePrefix (default "tabrelay"). */
export const SECRET_KEY = ":secret";

const SECRET_BYTES = 32;
const SECRET_PATTERN = /^[A-Za-z0-9_-]{43}$/; // 32 bytes, unpadded base64url

export function base64url(bytes: Uint8Array): string {
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/**
 * loadOrCreateSecret returns the browser's secret from localStorage, made
 * once from crypto.getRandomValues. It lives nowhere else: never a URL, a
 * cookie or a header (§2). A stored value that is not a secret (edited by
 * hand, an older format) is replaced: this browser then pairs anew.
 */
export function loadOrCreateSecret(env: Environment, storage: StorageLike, prefix: string): string {
  const key = prefix + SECRET_KEY;
  const stored = storage.getItem(key);
  if (stored !== null && SECRET_PATTERN.test(stored)) return stored;
  if (stored !== null) env.warn("the stored tab secret is malformed; this browser pairs anew");
  const bytes = new Uint8Array(SECRET_BYTES);
  env.randomBytes(bytes);
  const secret = base64url(bytes);
  storage.setItem(key, secret);
  // Two tabs opened at once may both have made one: the last write wins.
  // The client reads the secret anew before each hello, so the other tab
  // sends the winner from its next hello on.
  return storage.getItem(key) ?? secret;
}

/**
 * forgetSecret deletes the secret after the relay said the pairing was
 * forgotten (4102) — only if it is still the one this tab sent: another
 * tab may have made the browser's new one since.
 */
export function forgetSecret(storage: StorageLike, prefix: string, secret: string): void {
  if (storage.getItem(prefix + SECRET_KEY) === secret) storage.removeItem(prefix + SECRET_KEY);
}

/**
 * TabId is this page's id, kept in memory only (§5): sessionStorage would
 * hand it to a duplicated tab, and the relay would then close one of the
 * two with 4008. A reload makes a new one. A 4008 all the same (another
 * page load took it) makes a new one too (renew).
 */
export class TabId {
  private id = "";

  constructor(private readonly env: Environment) {
    this.renew();
  }

  get value(): string {
    return this.id;
  }

  /** renew makes a new id: another page load uses this one (4008). */
  renew(): string {
    const bytes = new Uint8Array(12);
    this.env.randomBytes(bytes);
    return (this.id = "t" + base64url(bytes));
  }
}
