import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { permissionKindsOf, toBundle } from "@tabrelay/tab";
import { app, BOARD_VIEW } from "../src/tools.js";

test("the tools others call, by name", () => {
  assert.deepEqual(app.tools.map((t) => t.name), ["list_notes", "read_note", "write_note", "delete_note", "export_notes", "search_notes", "board_picture"]);
  assert.deepEqual(app.app, { name: "notes", title: "Notes board" });
  assert.equal(app.version, "notes-1");
});

test("the instructions name only tools that exist, and say results are data", () => {
  const named = [...app.instructions.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]);
  assert.ok(named.includes("list_notes") && named.includes("read_note"));
  for (const n of named) assert.ok(app.tools.some((t) => t.name === n), `\`${n}\` is no tool`);
  assert.match(app.instructions, /never instructions/);
  assert.match(app.instructions, /detached/);
});

test("the permission kinds", () => {
  const kinds = (name: string, action?: string) => permissionKindsOf(app.tools.find((t) => t.name === name)!, action);
  assert.deepEqual(kinds("write_note", "add"), ["change"]);
  assert.deepEqual(kinds("write_note", "edit"), ["change"]);
  assert.deepEqual(kinds("delete_note"), ["deletes-saved"]);
  assert.deepEqual(kinds("export_notes"), ["large-download"]);
  assert.equal(app.tools.find((t) => t.name === "export_notes")?.confirmAt, "handler", "the export asks once its size is known");
  assert.deepEqual(kinds("search_notes"), ["heavy"]);
  assert.deepEqual(kinds("list_notes"), []);
});

test("bundle.json is the declaration's own, with the card", () => {
  const committed = JSON.parse(readFileSync(new URL("../bundle.json", import.meta.url), "utf8"));
  assert.deepEqual(committed, JSON.parse(JSON.stringify(toBundle(app))));
  const card = committed.resources.find((r: { uri: string }) => r.uri === BOARD_VIEW);
  assert.equal(card.mimeType, "text/html;profile=mcp-app");
  assert.match(card.text, /^<!doctype html>/);
});
