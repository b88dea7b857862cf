import assert from "node:assert/strict";
import { test } from "node:test";
import { STOP_MESSAGES, type Status, type StopReason } from "@tabrelay/tab";
import { statusWords } from "../src/status.js";

test("every state in words", () => {
  const now = 1_000_000;
  assert.match(statusWords({ state: "idle" }), /Not connected/);
  assert.match(statusWords({ state: "connecting" }), /Connecting/);
  assert.match(statusWords({ state: "connected", pairing: "p" }), /^Connected/);
  const broke: Status = { state: "reconnecting", retryAt: now + 2500, seconds: 3, code: 1006 };
  assert.match(statusWords(broke, now), /broke; trying again in 3 s/);
  assert.match(statusWords({ state: "reconnecting", retryAt: now, seconds: 0, code: 4003 }, now), /code 4003\); trying again now/);
  for (const why of Object.keys(STOP_MESSAGES) as StopReason[]) {
    assert.equal(statusWords({ state: "stopped", why, message: STOP_MESSAGES[why] }), `Not connected: ${STOP_MESSAGES[why]}`);
  }
});
