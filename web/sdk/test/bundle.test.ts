// Tools declared once: the declarations make the bundle the relay loads.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, test } from "node:test";
import { checkApp, defineApp, permissionKindsOf, toBundle, type AppDeclaration } from "../src/tools.js";
import { app } from "./app.js";
import { packageDir, repoDir } from "./paths.js";

/** declarationOf reads a shipped bundle back as the declaration that would make it. */
function declarationOf(file: string): { bundle: Record<string, unknown>; decl: AppDeclaration } {
  const bundle = JSON.parse(readFileSync(join(repoDir, "protocol", file), "utf8")) as Record<string, unknown>;
  const { protocol: _, ...rest } = bundle;
  return { bundle, decl: rest as unknown as AppDeclaration };
}

describe("the bundle", () => {
  for (const file of ["probe_bundle.json", "conformance_bundle.json"]) {
    test(`declaring ${file}'s tools makes ${file} again`, () => {
      const { bundle, decl } = declarationOf(file);
      assert.deepEqual(toBundle(decl), bundle);
    });
  }

  test("permission kinds go into the bundle, per tool and per action", () => {
    const { decl } = declarationOf("probe_bundle.json");
    const withKinds = {
      ...decl,
      tools: decl.tools.map((t) => ({
        ...t, permissions: ["change" as const],
        ...(t.actions ? { actions: t.actions.map((a) => ({ ...a, permissions: ["heavy" as const] })) } : {}),
      })),
    };
    const tools = toBundle(withKinds)["tools"] as { permissions?: string[]; actions?: { permissions?: string[] }[] }[];
    assert.ok(tools.every((t) => t.permissions?.[0] === "change"));
    assert.ok(tools.flatMap((t) => t.actions ?? []).every((a) => a.permissions?.[0] === "heavy"));
  });

  test("permission kinds: an action's own replace its tool's", () => {
    const counter = app.tools[1];
    assert.deepEqual(permissionKindsOf(counter, "increment"), ["change"]);
    assert.deepEqual(permissionKindsOf(counter, "get"), []);
  });

  test("undeclared kinds (issue 24 item 9): a write counts as change, a destructive one deletes too; a read raises none", () => {
    const tool = (annotations?: object, permissions?: string[]) =>
      ({ name: "t", description: "T.", inputSchema: { type: "object" }, ...(annotations ? { annotations } : {}), ...(permissions ? { permissions } : {}) }) as AppDeclaration["tools"][number];
    assert.deepEqual(permissionKindsOf(tool()), ["change"]);
    assert.deepEqual(permissionKindsOf(tool({ readOnlyHint: false })), ["change"]);
    assert.deepEqual(permissionKindsOf(tool({ destructiveHint: true })), ["change", "deletes-saved"]);
    assert.deepEqual(permissionKindsOf(tool({ readOnlyHint: true })), []);
    assert.deepEqual(permissionKindsOf(tool({ destructiveHint: true }, [])), [], "declared kinds, even none, say otherwise");
    assert.deepEqual(permissionKindsOf(tool({ destructiveHint: true }, ["heavy"])), ["heavy"]);
  });

  test("a result class may be left out (unclassified); dataScope names fields and arguments", () => {
    const [echo] = app.tools;
    const { result: _, ...unclassified } = echo;
    assert.equal(checkApp({ ...app, tools: [unclassified] }), undefined);
    const scoped = { ...echo, inputSchema: { type: "object", properties: { group: { type: "string" } } }, dataScope: { singleCell: ["stats.*.min"], pictures: ["thumb"], groups: ["group"] } } as const;
    assert.equal(checkApp({ ...app, tools: [scoped] }), undefined);
    assert.deepEqual(toBundle({ ...app, tools: [scoped] })["tools"], [scoped]);
    assert.match(checkApp({ ...app, tools: [{ ...scoped, dataScope: { groups: ["nope"] } }] }) ?? "", /dataScope\.groups: "nope" is not an argument/);
    assert.match(checkApp({ ...app, tools: [{ ...scoped, dataScope: { singleCell: ["a..b"] } }] }) ?? "", /dataScope\.singleCell/);
  });

  const broken: [string, (a: AppDeclaration) => unknown, RegExp][] = [
    ["no version", (a) => ({ ...a, version: "" }), /^version/],
    ["a bad app name", (a) => ({ ...a, app: { name: "Big App", title: "x" } }), /^app\.name/],
    ["no tools", (a) => ({ ...a, tools: [] }), /^tools: at least one/],
    ["a tool named twice", (a) => ({ ...a, tools: [a.tools[0], a.tools[0]] }), /tools\[1\]\.name: "echo" appears twice/],
    ["a bad result class", (a) => ({ ...a, tools: [{ ...a.tools[0], result: "rows" }] }), /tools\[0\]\.result/],
    ["no description", (a) => ({ ...a, tools: [{ ...a.tools[0], description: " " }] }), /tools\[0\]\.description/],
    ["a schema not of an object", (a) => ({ ...a, tools: [{ ...a.tools[0], inputSchema: { type: "string" } }] }), /inputSchema/],
    ["actions without an action property", (a) => ({ ...a, tools: [{ ...a.tools[0], actions: [{ name: "go" }] }] }), /"action" property/],
    ["an unknown permission kind", (a) => ({ ...a, tools: [{ ...a.tools[0], permissions: ["explodes"] }] }), /permissions: "explodes"/],
    ["a permission kind twice", (a) => ({ ...a, tools: [{ ...a.tools[0], permissions: ["change", "change"] }] }), /permissions: "change" appears twice/],
    ["instructions naming a tool it lacks", (a) => ({ ...a, instructions: "Call `history` first." }), /^instructions: names the tool `history`/],
    ["answersAt naming a tool it lacks", (a) => ({ ...a, answersAt: "the log (`history`)" }), /^answersAt: names the tool `history`/],
    ["answersAt over 200 characters", (a) => ({ ...a, answersAt: "x".repeat(201) }), /^answersAt: at most 200/],
    ["answersAt with markup", (a) => ({ ...a, answersAt: "<b>the counter</b>" }), /^answersAt: one line/],
  ];

  test("answersAt goes into the bundle, and a backticked span that is no tool name is let be", () => {
    const decl = { ...app, instructions: app.instructions + " Scopes look like `counter:get`.", answersAt: "the counter (`counter`)" };
    assert.equal(checkApp(decl), undefined);
    assert.equal(toBundle(decl)["answersAt"], "the counter (`counter`)");
    assert.equal("answersAt" in toBundle(app), false);
  });
  for (const [what, edit, message] of broken) {
    test(`a declaration with ${what} is refused, naming the field`, () => {
      const bad = edit(app) as AppDeclaration;
      assert.match(checkApp(bad) ?? "", message);
      assert.throws(() => defineApp(bad), TypeError);
    });
  }
});

describe("tabrelay-bundle", () => {
  const cli = join(packageDir, "dist", "tabrelay-bundle.js");
  const dir = mkdtempSync(join(tmpdir(), "tabrelay-bundle-"));
  const module = join(dir, "tools.mjs");
  writeFileSync(module, `import { defineApp } from ${JSON.stringify(pathToFileURL(join(packageDir, "dist", "tabrelay.js")).href)};
export const app = defineApp(${JSON.stringify({ ...app })});\n`);
  const out = join(dir, "bundle.json");
  const run = (...args: string[]) => spawnSync(process.execPath, [cli, ...args], { cwd: dir, encoding: "utf8" });

  test("--out writes the bundle of the app module", () => {
    const r = run("--app", module, "--out", out);
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(readFileSync(out, "utf8")), toBundle(app));
  });

  test("--check passes on a current bundle and fails on a stale or missing one", () => {
    assert.equal(run("--app", module, "--out", out).status, 0);
    assert.equal(run("--app", module, "--out", out, "--check").status, 0);
    writeFileSync(out, readFileSync(out, "utf8").replace("Answers with its arguments.", "Old words."));
    const stale = run("--app", module, "--out", out, "--check");
    assert.equal(stale.status, 1);
    assert.match(stale.stderr, /bundle\.json is stale; run tabrelay-bundle --out/);
    assert.equal(run("--app", module, "--out", join(dir, "none.json"), "--check").status, 1);
  });

  test("package.json's tabrelay.app names the module when --app is left out", () => {
    writeFileSync(join(dir, "package.json"), JSON.stringify({ tabrelay: { app: "./tools.mjs" } }));
    assert.equal(run("--out", out).status, 0, "written");
  });

  test("--check warns about a write tool that declares no kinds and a tool with no result class (issue 24 items 2, 9)", () => {
    const loose = join(dir, "loose.mjs");
    const tools = [
      { name: "wipe", description: "Wipes.", inputSchema: { type: "object" }, annotations: { destructiveHint: true }, result: "none" },
      { name: "peek", description: "Peeks.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } },
      { name: "tidy", description: "Tidies.", inputSchema: { type: "object" }, result: "none", permissions: [] },
    ];
    writeFileSync(loose, `export default ${JSON.stringify({ version: "1", app: { name: "loose", title: "L" }, instructions: "", tools })};\n`);
    const looseOut = join(dir, "loose.json");
    assert.equal(run("--app", loose, "--out", looseOut).status, 0);
    const r = run("--app", loose, "--out", looseOut, "--check");
    assert.equal(r.status, 0, "warnings do not fail the check");
    assert.deepEqual(r.stderr.trim().split("\n"), [
      "tabrelay-bundle: warning: wipe: a write tool (no readOnlyHint) that declares no permissions: it counts as change and deletes-saved; declare its kinds",
      "tabrelay-bundle: warning: peek: no result class: while the data switch is on it is refused; classify it as cells, summaries or none",
    ]);
  });

  test("--help prints the usage and exits 0", () => {
    const r = run("--help");
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^usage: tabrelay-bundle /);
  });

  test("usage mistakes and a bad declaration exit 2 with one line", () => {
    assert.equal(run().status, 2);
    assert.equal(run("--bogus").status, 2);
    const bad = join(dir, "bad.mjs");
    writeFileSync(bad, `export default { version: "1", app: { name: "x", title: "X" }, instructions: "", tools: [] };\n`);
    const r = run("--app", bad, "--out", out);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /^tabrelay-bundle: tabrelay: tools: at least one tool is required\n$/);
  });
});
