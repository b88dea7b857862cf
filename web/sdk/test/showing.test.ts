// The elements that show one source the app sets (ui/controls-dom.ts
// Showing): <tabrelay-activity> (turns), <tabrelay-data-switch> and
// <tabrelay-permissions> (permissions). Each follows its source while in
// the page — a change draws it again — lets go of a source replaced, and of
// its source once out of the page, and follows again when put back.

import assert from "node:assert/strict";
import { test } from "node:test";
import { defineApp } from "../src/tools.js";
import { doc, FakeNode } from "./dom.js";
import { MemoryStorage } from "./fakes.js";

const ui = await import("../src/ui/index.js");

const app = defineApp({
  version: "s-1", app: { name: "showing", title: "Showing" }, instructions: "Tools.",
  tools: [{ name: "read", description: "Reads.", inputSchema: { type: "object" }, result: "summaries" }],
});
const perms = () => ui.createPermissions({ app, environment: { storage: new MemoryStorage(), onStorage: () => () => {}, onPageHide: () => () => {} } });

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
