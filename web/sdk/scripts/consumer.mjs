// The package as a team installs it (issue 26): `npm pack`, the tarball's
// file list checked against the one we mean to publish, the tarball
// installed into a fresh project, and that project's imports of both
// entries (test/consumer/*.ts) type-checked without skipLibCheck under
// nodenext and bundler resolution, with the oldest TypeScript the package
// supports, the newest 5.x and the package's own (the newest); then node
// imports both entries from it, and its tabrelay-bundle command writes a
// bundle. The TypeScripts come from the npm registry
// once and are kept under the repository's .cache/sdk-consumer/.
//
//   node scripts/consumer.mjs
//
// Fails with one line per failure.

import { execFileSync, spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const cache = join(root, "..", "..", ".cache", "sdk-consumer");
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const own = JSON.parse(readFileSync(join(root, "node_modules/typescript/package.json"), "utf8")).version;

/** The TypeScripts a consumer may use: the oldest supported (const type parameters need 5.0), the newest 5.x, and ours. */
const TYPESCRIPTS = ["5.0.4", "5.9.3", own];

/** What the tarball holds: the built modules (the German among them), their types, the stylesheet, the CLI and the docs. */
const PACKED = [
  "CHANGELOG.md", "README.md", "package.json",
  "dist/tabrelay-bundle.js", "dist/tabrelay-chat.d.ts", "dist/tabrelay-chat.js", "dist/tabrelay-ui-de.d.ts", "dist/tabrelay-ui-de.js", "dist/tabrelay-ui.css", "dist/tabrelay-ui.d.ts", "dist/tabrelay-ui.js", "dist/tabrelay.d.ts", "dist/tabrelay.js",
];

const RESOLUTIONS = {
  nodenext: { module: "nodenext", moduleResolution: "nodenext" },
  bundler: { module: "esnext", moduleResolution: "bundler" },
};

const failures = [];
const work = mkdtempSync(join(tmpdir(), "tabrelay-consumer-"));
try {
  const tarball = pack(work);
  const project = join(work, "app");
  mkdirSync(project);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  run(npm, ["install", "--no-audit", "--no-fund", "--loglevel=error", "--prefer-offline", tarball], project, "npm install of the tarball");
  cpSync(join(root, "test/consumer"), join(project, "src"), { recursive: true });
  const checks = [];
  for (const version of TYPESCRIPTS) {
    const tsc = typescript(version);
    for (const [name, options] of Object.entries(RESOLUTIONS)) {
      const config = join(project, `tsconfig.${name}.json`);
      writeFileSync(config, JSON.stringify({
        compilerOptions: {
          ...options, target: "es2022", lib: ["es2022", "dom"], types: [], strict: true, exactOptionalPropertyTypes: true,
          noUncheckedIndexedAccess: true, skipLibCheck: false, noEmit: true,
        },
        include: ["src"],
      }));
      checks.push({ what: `TypeScript ${version}, ${name} resolution`, args: [tsc, "-p", config] });
    }
  }
  // Two at a time: each is one process on one core.
  const pending = [...checks];
  await Promise.all([0, 1].map(async () => {
    for (let c = pending.shift(); c; c = pending.shift()) {
      const r = await spawned(process.execPath, c.args, project);
      if (r.status !== 0) failures.push(`${c.what}:\n${r.output.trim()}`);
    }
  }));
  const imported = spawnSync(process.execPath, ["--input-type=module", "-e",
    'const core = await import("@tabrelay/tab"); const ui = await import("@tabrelay/tab/ui"); const { de } = await import("@tabrelay/tab/ui/de"); const chat = await import("@tabrelay/tab/chat");' +
    'if (typeof core.connect !== "function" || typeof ui.createPermissions !== "function" || de?.lang !== "de" || typeof chat.anthropicProvider !== "function") throw new Error("an entry lacks its exports");'],
  { cwd: project, encoding: "utf8" });
  if (imported.status !== 0) failures.push(`node cannot import the installed entries: ${imported.stderr.trim()}`);
  // The CLI, through the bin link npm made, on a declaration that imports the installed package.
  writeFileSync(join(project, "tools.mjs"), 'import { defineApp } from "@tabrelay/tab";\n' +
    'export const app = defineApp({ version: "todo-1", app: { name: "todo", title: "Todo" }, instructions: "Todo tools.",\n' +
    '  tools: [{ name: "list_todos", description: "Lists the todos.", inputSchema: { type: "object" }, result: "cells" }] });\n');
  const cli = spawnSync(join(project, "node_modules/.bin/tabrelay-bundle"), ["--app", "./tools.mjs", "--out", "bundle.json"], { cwd: project, encoding: "utf8" });
  const bundle = cli.status === 0 ? JSON.parse(readFileSync(join(project, "bundle.json"), "utf8")) : undefined;
  if (bundle?.tools?.[0]?.name !== "list_todos") failures.push(`npx tabrelay-bundle did not write the bundle: ${(cli.stderr ?? "") + (cli.error ?? "")}`.trim());
} finally {
  rmSync(work, { recursive: true, force: true });
}
if (failures.length) {
  for (const f of failures) console.error("consumer: " + f);
  process.exit(1);
}
console.log(`consumer: the packed tarball type-checks with TypeScript ${TYPESCRIPTS.join(", ")} (nodenext, bundler), imports in node, and its tabrelay-bundle runs`);

/**
 * pack writes the tarball into dir, checks its file list, and returns its
 * path. First it checks that package.json is as npm publishes it: npm
 * "corrects" some mistakes at publish time only (a bin path it finds
 * invalid is dropped), which `npm pkg fix` shows on a copy.
 */
function pack(dir) {
  const copy = join(dir, "pkg-fix");
  mkdirSync(copy);
  const manifest = readFileSync(join(root, "package.json"), "utf8");
  writeFileSync(join(copy, "package.json"), manifest);
  run(npm, ["pkg", "fix", "--loglevel=error"], copy, "npm pkg fix");
  if (JSON.stringify(JSON.parse(readFileSync(join(copy, "package.json"), "utf8"))) !== JSON.stringify(JSON.parse(manifest))) {
    failures.push(`npm would correct package.json when publishing (npm pkg fix changes it): ${readFileSync(join(copy, "package.json"), "utf8")}`);
  }
  const out = run(npm, ["pack", "--json", "--pack-destination", dir, "--loglevel=error"], root, "npm pack");
  const [info] = JSON.parse(out);
  const files = info.files.map((f) => f.path).sort();
  const want = [...PACKED].sort();
  const extra = files.filter((f) => !want.includes(f)), missing = want.filter((f) => !files.includes(f));
  if (extra.length || missing.length) {
    failures.push(`the tarball holds ${extra.length ? "also " + extra.join(", ") : ""}${extra.length && missing.length ? "; " : ""}${missing.length ? "not " + missing.join(", ") : ""}`);
  }
  return join(dir, info.filename);
}

/** typescript returns the tsc of version, installed into the cache once (the package's own from its node_modules). */
function typescript(version) {
  if (version === own) return join(root, "node_modules/typescript/bin/tsc");
  const dir = join(cache, "typescript-" + version);
  const tsc = join(dir, "node_modules/typescript/bin/tsc");
  if (!existsSync(tsc)) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "package.json"), JSON.stringify({ private: true }));
    run(npm, ["install", "--no-audit", "--no-fund", "--loglevel=error", "--no-package-lock", `typescript@${version}`], dir, `npm install typescript@${version}`);
  }
  return tsc;
}

/** spawned runs a command in cwd and resolves with its exit status and output. */
function spawned(cmd, args, cwd) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    child.on("close", (status) => resolve({ status, output }));
  });
}

/** run runs a command in cwd and returns its stdout; a failure ends the script with its output. */
function run(cmd, args, cwd, what) {
  try {
    return execFileSync(cmd, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (e) {
    console.error(`consumer: ${what} failed: ${(e.stdout ?? "") + (e.stderr ?? e.message)}`.trim());
    process.exit(1);
  }
}
