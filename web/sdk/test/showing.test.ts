// The elements that show one source the app sets (dom/elements.ts
// Showing): <tabrelay-activity> (turns), <tabrelay-data-switch> and
// <tabrelay-permissions> (permissions) of the UI module, <tabrelay-chat>
// (chat) of the chat's. Each follows its source while in the page — a
// change draws it again — lets go of a source replaced, and of its source
// once out of the page, and follows again when put back; it follows the
// messages table (setMessages) the same way.

import assert from "node:assert/strict";
import { test } from "node:test";
import { defineApp } from "../src/tools.js";
import { doc, FakeNode } from "./dom.js";
import { MemoryStorage } from "./fakes.js";

const ui = await import("../src/ui/index.js");
const chat = await import("../src/chat/index.js");
const { de } = await import("../src/locales/de.js");

const app = defineApp({
  version: "s-1", app: { name: "showing", title: "Showing" }, instructions: "Tools.",
  tools: [{ name: "read", description: "Reads.", inputSchema: { type: "object" }, result: "summaries" }],
});
const perms = () => ui.createPermissions({ app, environment: { storage: new MemoryStorage(), onStorage: () => () => {}, onPageHide: () => () => {} } });
const aChat = () => new chat.Chat({
  app, handlers: { read: () => ({}) }, permissions: perms(), providers: [chat.scriptedProvider([], { name: "Claude" })],
  keys: new chat.Keys({ tab: null, browser: null }),
});

/** counted makes source count who follows it (its onChange listeners). */
function counted<S extends { onChange(l: never): () => void }>(source: S): S & { following: number } {
  const s = source as S & { following: number };
  const onChange = source.onChange.bind(source);
  s.following = 0;
  s.onChange = ((l: never) => {
    s.following++;
    const stop = onChange(l);
    return () => (s.following--, stop());
  }) as S["onChange"];
  return s;
}

type Shown = FakeNode & { connectedCallback(): void; disconnectedCallback(): void } & Record<string, unknown>;

for (const [name, Made, prop, source] of [
  ["<tabrelay-activity>", ui.TabrelayActivity, "turns", () => perms().turns],
  ["<tabrelay-data-switch>", ui.TabrelayDataSwitch, "permissions", perms],
  ["<tabrelay-permissions>", ui.TabrelayPermissions, "permissions", perms],
  ["<tabrelay-chat>", chat.TabrelayChat, "chat", aChat],
] as const) {
  test(`${name} follows its ${prop} only while in the page, and only the one set last`, () => {
    const el = new Made() as unknown as Shown;
    const first = counted(source());
    el[prop] = first;
    assert.equal(first.following, 0, "out of the page it follows nothing");
    doc.body.append(el);
    el.connectedCallback();
    assert.equal(first.following, 1, "in the page it follows its source");
    const second = counted(source());
    el[prop] = second;
    assert.equal(first.following, 0, "a replaced source is let go");
    assert.equal(second.following, 1);
    el.remove();
    el.disconnectedCallback();
    assert.equal(second.following, 0, "out of the page again, it lets go");
    doc.body.append(el);
    el.connectedCallback();
    assert.equal(second.following, 1, "put back, it follows again");
    el.remove();
    el.disconnectedCallback();
  });
}

test("a change of the source draws the element again", () => {
  const p = perms();
  const el = new ui.TabrelayDataSwitch() as unknown as Shown;
  el["permissions"] = p;
  doc.body.append(el);
  el.connectedCallback();
  const input = el.querySelector("input") as unknown as { checked: boolean; disabled: boolean };
  assert.equal(input.checked, false);
  assert.equal(input.disabled, false);
  p.setSummariesOnly(true);
  assert.equal(input.checked, true, "the switch follows the permissions");
  el["permissions"] = undefined;
  assert.equal(input.disabled, true, "without permissions it cannot be used");
  el.remove();
  el.disconnectedCallback();
});

test("<tabrelay-chat> draws its words again at setMessages while in the page, and its chat's instructions at a change", () => {
  const c = aChat();
  const el = new chat.TabrelayChat() as unknown as Shown;
  el["chat"] = c;
  doc.body.append(el);
  el.connectedCallback();
  const send = () => el.querySelector("[data-action=send]")!.textContent;
  const instructions = () => (el.querySelector("[data-part=instructions]") as unknown as { value: string }).value;
  assert.equal(send(), "Send");
  try {
    ui.setMessages(de);
    assert.equal(send(), "Senden", "the chat's element follows the table the UI module sets");
    assert.equal(el.getAttribute("lang"), "de");
    el.remove();
    el.disconnectedCallback();
    ui.setMessages(ui.en);
    assert.equal(send(), "Senden", "out of the page it follows nothing");
    doc.body.append(el);
    el.connectedCallback();
    assert.equal(send(), "Send", "put back after the table changed, it draws in the table of now");
    assert.equal(el.getAttribute("lang"), "en");
    ui.setMessages(de);
    assert.equal(send(), "Senden", "and follows the table again");
    ui.setMessages(ui.en);
    c.instructions = "Be brief.";
    c.setModel("scripted");
    assert.equal(instructions(), "Be brief.", "the field shows the chat's instructions");
  } finally {
    ui.setMessages(ui.en);
    el.remove();
    el.disconnectedCallback();
  }
});
