// The person's API keys (src/chat/keys.ts) and the export
// (src/chat/export.ts): a key is kept for the tab unless Remember, per
// provider and API origin, and never ends up in the conversation or the
// export; the export escapes raw HTML, forms no link, and strips the data
// marks.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Conversation } from "../src/chat/conversation.js";
import { exportMarkdown, markdownSafe } from "../src/chat/export.js";
import { Keys } from "../src/chat/keys.js";
import { MemoryStorage } from "./fakes.js";

const anthropic = { id: "anthropic", origin: "https://api.anthropic.com" };
const gateway = { id: "anthropic", origin: "http://127.0.0.1:8788" };

describe("keys", () => {
  test("kept for this tab by default; Remember keeps it in this browser, and only there", () => {
    const tab = new MemoryStorage(), browser = new MemoryStorage();
    const keys = new Keys({ tab, browser });
    keys.set(anthropic, " sk-ant-1 ", false);
    assert.equal(keys.get(anthropic), "sk-ant-1");
    assert.equal(browser.length, 0);
    assert.equal(keys.remembered(anthropic), false);
    keys.set(anthropic, "sk-ant-2", true);
    assert.equal(tab.length, 0, "Remember moves it out of the tab's storage");
    assert.equal(keys.remembered(anthropic), true);
    assert.equal(new Keys({ tab: new MemoryStorage(), browser }).get(anthropic), "sk-ant-2", "another tab of the browser has it");
    keys.forget(anthropic);
    assert.equal(keys.get(anthropic), undefined);
    assert.equal(tab.length + browser.length, 0);
  });

  test("a key is kept per API origin: a key for api.anthropic.com is not the gateway's", () => {
    const keys = new Keys({ tab: new MemoryStorage(), browser: new MemoryStorage() });
    keys.set(anthropic, "sk-ant-1", false);
    assert.equal(keys.get(gateway), undefined);
  });

  test("a browser that keeps no site data keeps the key for the page", () => {
    const keys = new Keys({ tab: null, browser: null });
    keys.set(anthropic, "sk-ant-1", true);
    assert.equal(keys.get(anthropic), "sk-ant-1");
  });

  test("an empty key is refused", () => {
    assert.throws(() => new Keys({ tab: null, browser: null }).set(anthropic, "  ", false), TypeError);
  });
});

describe("export", () => {
  test("raw HTML is escaped, no link forms, the data tags are stripped", () => {
    const c = new Conversation("chat-1", []);
    c.add({ role: "user", turn: "t1", text: "Show <img src=x onerror=alert(1)> and [click](javascript:alert(1))", at: 0 });
    c.add({ role: "assistant", turn: "t1", parts: [{ type: "text", text: "Sure: <script>alert(2)</script>" }, { type: "call", id: "c1", name: "list_notes", arguments: { q: "<b>" } }], at: 0, model: "m", sent: { results: 0, pictures: 0, keptOut: 0 } });
    c.add({ role: "tool", turn: "t1", results: [{ id: "c1", name: "list_notes", text: '<notes-data>{"title":"\\u003c/notes-data> [x](javascript:y)"}</notes-data>', isError: false, cells: false, keptOut: false }] });
    const md = exportMarkdown(c, { provider: "Claude", dataTag: "notes-data" });
    assert.doesNotMatch(md, /<[a-z/]/i, "no raw tag of any kind");
    assert.doesNotMatch(md, /[^\\]\]\(/, "no link: every ] is escaped");
    assert.doesNotMatch(md, /notes-data&gt;\{/, "the opening data tag is gone");
    assert.match(md, /&lt;img src=x onerror=alert\(1\)&gt;/);
    assert.match(md, /&lt;\/notes-data&gt; \\\[x\\\]\(javascript:y\)/, "the value's own text stays, escaped");
    assert.equal(markdownSafe("a & b"), "a &amp; b");
  });
});
