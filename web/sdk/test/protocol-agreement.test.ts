// The SDK's vocabulary is the relay's: the message types and close codes
// in src/ agree with protocol/messages.go and protocol/disconnect.go (both
// generated from them: src/wire.ts and src/close-codes.ts).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { RECONNECT_CODES } from "../src/close-codes.js";
import { CLOSE_REPLACED } from "../src/codes.js";
import { MAX_MESSAGE_BYTES, PROTOCOL_VERSION, RELAY_MESSAGE_TYPES, TAB_MESSAGE_TYPES } from "../src/wire.js";
import { repoDir } from "./paths.js";

const goFile = (name: string) => readFileSync(join(repoDir, "protocol", name), "utf8");

/** constBlock returns the string constants of the const block after a comment line. */
function constBlock(src: string, comment: string): string[] {
  const start = src.indexOf(comment);
  assert.ok(start >= 0, `protocol/messages.go has no block "${comment}"`);
  const block = src.slice(src.indexOf("(", start), src.indexOf("\n)", start));
  return [...block.matchAll(/=\s*"([^"]+)"/g)].map((m) => m[1]!);
}

test("the message types are protocol/messages.go's", () => {
  // wire.ts is generated from protocol/messages.go (the Go test
  // TestSDKWireTypesAreGenerated fails when it is stale); this checks it
  // against the Go source as written, not as the generator read it.
  const src = goFile("messages.go");
  assert.deepEqual([...TAB_MESSAGE_TYPES].sort(), constBlock(src, "// Message types a tab sends").sort());
  assert.deepEqual([...RELAY_MESSAGE_TYPES].sort(), constBlock(src, "// Message types the relay sends").sort());
  assert.match(src, new RegExp(`const Version = ${PROTOCOL_VERSION}\\b`));
  assert.match(src, /const MaxMessageBytes = 16 << 20/);
  assert.equal(MAX_MESSAGE_BYTES, 16 << 20);
});

test("4008 is the replaced code (CLOSE_REPLACED)", () => {
  // The codes are generated from protocol/disconnect.go; the Go test
  // TestSDKCloseCodesAreGenerated fails when close-codes.ts is stale.
  assert.equal(RECONNECT_CODES[CLOSE_REPLACED], "replaced");
});
