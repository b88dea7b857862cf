// The chat's results between the data tags are the relay's: the cases of
// test/recorded/encoding.json, which protocol/encoding_agreement_test.go
// checks against the relay's encoder.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { encodeResult } from "../src/chat/encode.js";
import type { TabResult } from "../src/protocol.js";
import { packageDir } from "./paths.js";

const cases = JSON.parse(readFileSync(join(packageDir, "test", "recorded", "encoding.json"), "utf8")) as {
  what: string; tag: string; repeat?: [string, number]; result: TabResult; text: string; isError: boolean;
}[];

for (const c of cases) {
  test(`the chat encodes as the relay does: ${c.what}`, () => {
    // The tab's data reaches the relay as JSON.stringify writes it.
    const result = c.repeat ? { ...c.result, data: c.repeat[0].repeat(c.repeat[1]) } : c.result;
    const got = encodeResult(c.tag, result);
    assert.equal(got.isError, c.isError);
    assert.ok(got.text === c.text, `the chat encodes\n${got.text.slice(0, 300)}\nthe relay\n${c.text.slice(0, 300)}`);
  });
}

test("pictures pass; sound clips and resources are left out with a sentence", () => {
  const r = encodeResult("tabrelay-data", {
    data: 1, images: [{ mimeType: "image/png", data: "iVBORw0KGgo=" }, { mimeType: "text/html", data: "PGI+" }],
    audio: [{ mimeType: "audio/wav", data: "AAAA" }],
  });
  assert.deepEqual(r.images, [{ mimeType: "image/png", data: "iVBORw0KGgo=" }]);
  assert.match(r.text, /Picture 2 was left out/);
  assert.match(r.text, /1 sound clip was left out/);
});
