// The permission settings element's model and words (src/ui/permissions.ts),
// without a DOM: the kinds an app's declaration uses, the modes with Custom,
// a row per kind with its words, and that the view follows the permissions.

import assert from "node:assert/strict";
import { test } from "node:test";
import { defineApp, PERMISSION_KINDS } from "../src/tools.js";
import { createPermissions, MODES } from "../src/ui/permissions-model.js";
import { en } from "../src/ui/messages-en.js";
import { kindsUsed, settingsView } from "../src/ui/permissions.js";
import { MemoryStorage } from "./fakes.js";

const app = defineApp({
  version: "s-1", app: { name: "settings", title: "Settings" }, instructions: "Tools.",
  tools: [
    { name: "read", description: "Reads.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true }, result: "summaries" },
    {
      name: "file", description: "Files.", inputSchema: { type: "object", properties: { action: { type: "string" } } }, result: "none",
      permissions: ["change"], actions: [{ name: "rename" }, { name: "delete", permissions: ["deletes-saved", "change"] }],
    },
    { name: "render", description: "Renders.", inputSchema: { type: "object" }, result: "none", permissions: ["heavy"] },
  ],
});

function perms(storage = new MemoryStorage()) {
  return createPermissions({ app, environment: { storage, onStorage: () => () => {}, onPageHide: () => () => {} } });
}

test("kindsUsed lists the kinds of the app's tools and actions, in the kinds' order", () => {
  assert.deepEqual(kindsUsed(app), ["change", "heavy", "deletes-saved"]);
  assert.deepEqual(kindsUsed(defineApp({ ...app, tools: [app.tools[0]] })), []);
});

test("every kind and mode has a label and a one-line explanation", () => {
  for (const kind of PERMISSION_KINDS) {
    const w = en.permissions.kinds[kind];
    assert.ok(w.label && w.explanation.endsWith(".") && !w.explanation.includes("\n"), kind);
  }
  for (const m of [...Object.keys(MODES), "custom"] as const) assert.ok(en.permissions.modes[m as keyof typeof en.permissions.modes].explanation, m);
});

test("the view: the default mode checked, Custom shown but not selectable, a row per used kind", () => {
  const p = perms();
  const v = settingsView(p, kindsUsed(p.app));
  assert.equal(v.mode, "ask-heavy-irreversible");
  assert.deepEqual(v.modes.map((m) => [m.mode, m.checked, m.disabled]), [
    ["ask-heavy-irreversible", true, false], ["allow-undoable", false, false], ["read-only", false, false], ["custom", false, true],
  ]);
  assert.equal(v.modes[0]!.title, "Ask before heavy or irreversible");
  assert.deepEqual(v.kinds.map((r) => [r.kind, r.label, r.setting]), [
    ["change", "Changes", "allow"], ["heavy", "Heavy work", "ask"], ["deletes-saved", "Deleting saved things", "ask"],
  ]);
  assert.deepEqual(v.kinds[0]!.options.map((o) => [o.label, o.checked]), [["Ask", false], ["Allow", true], ["Deny", false]]);
  assert.match(v.note, /Only the kinds this app's tools use are shown/);
});

test("the view follows the permissions: a mode, a kind set apart (Custom), a change another tab stored", () => {
  const storage = new MemoryStorage();
  const p = perms(storage);
  let changes = 0;
  p.onChange(() => changes++);
  p.setMode("read-only");
  let v = settingsView(p, kindsUsed(app));
  assert.equal(v.mode, "read-only");
  assert.equal(v.modes.find((m) => m.checked)?.mode, "read-only");
  assert.equal(v.kinds[0]!.setting, "deny");
  p.set("change", "allow");
  v = settingsView(p, kindsUsed(app));
  assert.equal(v.mode, "custom");
  assert.deepEqual(v.modes.filter((m) => m.checked).map((m) => m.mode), ["custom"]);
  assert.equal(v.kinds[0]!.options.find((o) => o.checked)?.setting, "allow");
  assert.equal(changes, 2);
  // Another page of the same app reads what this one stored.
  assert.equal(settingsView(perms(storage), kindsUsed(app)).mode, "custom");
});

test("the note says when no kind or every kind is used", () => {
  const p = perms();
  assert.match(settingsView(p, []).note, /declare none of these kinds/);
  assert.match(settingsView(p, PERMISSION_KINDS).note, /Every kind is shown/);
  assert.equal(settingsView(p, PERMISSION_KINDS).kinds.length, 7);
});
