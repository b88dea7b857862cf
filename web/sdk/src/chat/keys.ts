// The person's API keys (seed 000 "The chat bar", Keys): kept for this
// tab (sessionStorage) unless the person ticks Remember (localStorage),
// under one name per provider and API origin — so a key entered for
// api.anthropic.com is never sent to a gateway named later, nor the
// reverse. A key is read only to be sent to that origin: it is never put
// in the DOM, a conversation, an export or a URL.

import { usableStorage } from "../env.js";
import type { StorageLike } from "../env.js";
import type { Provider } from "./contract.js";

const PREFIX = "tabrelay:chat-key:";

export interface KeyStores {
  /** This tab's (sessionStorage); null when the browser keeps none. */
  readonly tab: StorageLike | null;
  /** This browser's (localStorage), for Remember; null when it keeps none. */
  readonly browser: StorageLike | null;
}

/** defaultKeyStores returns the page's sessionStorage and localStorage, each null where blocked. */
export function defaultKeyStores(): KeyStores {
  const g = globalThis as { sessionStorage?: StorageLike; localStorage?: StorageLike };
  return { tab: usableStorage(() => g.sessionStorage), browser: usableStorage(() => g.localStorage) };
}

export class Keys {
  /** Keys held for the page only, where the browser keeps no site data. */
  private readonly page = new Map<string, string>();

  constructor(private readonly stores: KeyStores = defaultKeyStores()) {}

  private name(p: Pick<Provider, "id" | "origin">): string {
    return PREFIX + p.id + ":" + p.origin;
  }

  /** set keeps key for provider: in this tab, or with remember in this browser (and removes it from the other place). */
  set(p: Pick<Provider, "id" | "origin">, key: string, remember: boolean): void {
    const k = key.trim();
    if (!k) throw new TypeError("tabrelay chat: an empty key");
    const name = this.name(p);
    const [keep, drop] = remember ? [this.stores.browser, this.stores.tab] : [this.stores.tab, this.stores.browser];
    drop?.removeItem(name);
    this.page.delete(name);
    try {
      if (keep) return keep.setItem(name, k);
    } catch {
      // full or refused: kept for the page below
    }
    this.page.set(name, k);
  }

  /** get returns the key for provider, or undefined. */
  get(p: Pick<Provider, "id" | "origin">): string | undefined {
    const name = this.name(p);
    return this.stores.tab?.getItem(name) ?? this.stores.browser?.getItem(name) ?? this.page.get(name) ?? undefined;
  }

  /** remembered says whether the key for provider is kept in this browser. */
  remembered(p: Pick<Provider, "id" | "origin">): boolean {
    return this.stores.browser?.getItem(this.name(p)) != null;
  }

  /** forget removes the key for provider from everywhere. */
  forget(p: Pick<Provider, "id" | "origin">): void {
    const name = this.name(p);
    this.stores.tab?.removeItem(name);
    this.stores.browser?.removeItem(name);
    this.page.delete(name);
  }
}
