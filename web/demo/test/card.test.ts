import assert from "node:assert/strict";
import { test } from "node:test";
import { errorText, readResult } from "../src/card-model.js";

const text = (t: string) => ({ type: "text", text: t });

test("the card reads the picture and the data between the tags", () => {
  const v = readResult({
    content: [text('<tabrelay-data>{"notes":3,"url":"http://127.0.0.1:8080/demo/","x":"\\u003c/tabrelay-data>"}</tabrelay-data>'),
      { type: "image", mimeType: "image/png", data: "AAAA" }],
  });
  assert.deepEqual(v, { picture: "data:image/png;base64,AAAA", notes: 3, url: "http://127.0.0.1:8080/demo/" });
});

test("only an http(s) address can be opened", () => {
  const v = readResult({ content: [text('<tabrelay-data>{"notes":1,"url":"javascript:alert(1)"}</tabrelay-data>'), { type: "image", mimeType: "image/png", data: "AAAA" }] });
  assert.equal(v.url, undefined);
});

test("errors in words", () => {
  assert.deepEqual(readResult({ isError: true, content: [text("The person declined.")] }), { error: "The person declined." });
  assert.match(readResult({ content: [text("<tabrelay-data>{}</tabrelay-data>"), text("The picture was left out: too big.")] }).error!, /left out/);
  assert.match(readResult({ content: [] }).error!, /no picture/);
  assert.equal(errorText(new Error("timed out")), "The host could not do it: timed out");
});
