import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ceilingMs, jitteredWaitMs, MAX_RETRY_IN_MS, retryInMs, Retries, STABLE_AFTER_MS, type TryEnd } from "../src/backoff.js";

const refused: TryEnd = { welcomed: false, upMs: 0, drained: false };
const early: TryEnd = { welcomed: true, upMs: 3_000, drained: false };
const stable: TryEnd = { welcomed: true, upMs: STABLE_AFTER_MS, drained: false };
const drained: TryEnd = { welcomed: true, upMs: 1_000, drained: true };

describe("back-off (tab-protocol §15)", () => {
  test("the ceiling doubles from 0.5 s and stops at 20 s", () => {
    assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 40, 2000].map(ceilingMs), [500, 1000, 2000, 4000, 8000, 16000, 20000, 20000, 20000]);
  });

  test("full jitter: every wait is in [0, ceiling)", () => {
    for (const n of [0, 3, 9]) {
      assert.equal(jitteredWaitMs(n, () => 0), 0);
      assert.ok(jitteredWaitMs(n, () => 0.999999) < ceilingMs(n));
      assert.equal(jitteredWaitMs(n, () => 0.5), ceilingMs(n) / 2);
    }
  });

  test("a welcomed socket that lived 10 s starts again from the bottom", () => {
    const r = new Retries();
    [refused, refused, refused].forEach((e) => r.after(e));
    assert.equal(r.after(stable), 0);
  });

  test("a socket ended by a drain starts again from the bottom, however short", () => {
    const r = new Retries();
    r.after(early);
    r.after(early);
    assert.equal(r.after(drained), 0);
  });

  test("failed dials count until the next welcome", () => {
    const r = new Retries();
    assert.deepEqual([refused, refused, refused].map((e) => r.after(e)), [1, 2, 3]);
  });

  test("refused four times, then welcomed and dropped after 3 s: n is 1, not 5", () => {
    const r = new Retries();
    [refused, refused, refused, refused].forEach((e) => r.after(e));
    assert.equal(r.after(early), 1);
  });

  test("a relay that closes every socket right after its welcome meets growing waits", () => {
    const r = new Retries();
    const right: TryEnd = { welcomed: true, upMs: 5, drained: false };
    assert.deepEqual([1, 2, 3, 4, 5, 6].map(() => ceilingMs(r.after(right))), [1000, 2000, 4000, 8000, 16000, 20000]);
  });

  test("early ends are counted across refusals until a good try", () => {
    const r = new Retries();
    r.after(early); // 1
    r.after(refused); // 2
    assert.equal(r.after(early), 2, "the welcome forgets the refusal, not the earlier early end");
    assert.equal(r.after(stable), 0);
  });

  test("a close reason's retry in N s is read, bounded to an hour", () => {
    assert.equal(retryInMs("too many new browsers from this address; retry in 37 s"), 37_000);
    assert.equal(retryInMs("too many new browsers from this address; retry in 999999 s"), MAX_RETRY_IN_MS);
    for (const r of ["", "pairing unavailable; reconnect", "retry in 5 s later", "retry in -5 s", "retry in 1.5 s"]) {
      assert.equal(retryInMs(r), 0, r);
    }
  });
});
