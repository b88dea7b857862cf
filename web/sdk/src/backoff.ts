// The reconnect rule of docs/tab-protocol.md §15, kept pure so that tests
// can drive every case without sockets or clocks.

/** The floor and cap of the full-jitter waits (§15). */
export const MIN_BACKOFF_MS = 500;
export const MAX_BACKOFF_MS = 20_000;

/**
 * STABLE_AFTER_MS is how long a welcomed socket must stay up to count as a
 * good try. Half the cap is the mean of a capped full-jitter wait: a relay
 * that ends tabs this long after their welcome gets no more tries from a
 * tab than one that refuses them at the cap (§15 "Why this rule").
 */
export const STABLE_AFTER_MS = 10_000;

/** How one try ended. */
export interface TryEnd {
  /** A welcome came on the socket. */
  welcomed: boolean;
  /** How long the socket lived after its welcome, ms. */
  upMs: number;
  /** A drain ended it. */
  drained: boolean;
}

/**
 * Retries counts the failed tries that make the waits grow: welcomed
 * sockets in a row that ended early, plus dials since the last welcome
 * that got none (§15, the table of what n counts).
 */
export class Retries {
  private early = 0;
  private unwelcomed = 0;

  /** after records how a try ended and returns n, the exponent of the next wait. */
  after(end: TryEnd): number {
    if (!end.welcomed) {
      this.unwelcomed++;
    } else if (end.drained || end.upMs >= STABLE_AFTER_MS) {
      this.early = 0;
      this.unwelcomed = 0;
    } else {
      // A welcome forgets the refusals before it (a node that refused the
      // tab says nothing of the one that welcomed it), not the early ends.
      this.early++;
      this.unwelcomed = 0;
    }
    return this.early + this.unwelcomed;
  }
}

/** ceilingMs is the upper bound of the wait after n failed tries: min(20 s, 0.5 s × 2ⁿ). */
export function ceilingMs(n: number): number {
  return Math.min(MAX_BACKOFF_MS, MIN_BACKOFF_MS * 2 ** n); // 2ⁿ past 2¹⁰²³ is Infinity: still the cap
}

/** jitteredWaitMs draws the wait after n failed tries, uniform in [0, ceiling) ("full jitter"). */
export function jitteredWaitMs(n: number, random: () => number): number {
  return Math.floor(random() * ceilingMs(n));
}

/** MAX_RETRY_IN_MS bounds the wait a close reason may ask for. */
export const MAX_RETRY_IN_MS = 3_600_000;

/**
 * retryInMs reads the wait a close reason ends with, "retry in N s": a 4007
 * refusing a new browser whose address made its new pairings for now (§3,
 * §15). 0 when there is none; at most MAX_RETRY_IN_MS.
 */
export function retryInMs(reason: string): number {
  const m = /retry in ([0-9]{1,9}) s$/.exec(reason);
  return m ? Math.min(Number(m[1]) * 1000, MAX_RETRY_IN_MS) : 0;
}
