// The package as a React app installs it (issue 26): `npm pack` of this
// package and of the SDK, both tarballs installed into a fresh project
// with React 19 and its types, and the project's test/consumer/app.tsx
// (the hooks' and the elements' types, with @ts-expect-error cases)
// type-checked without skipLibCheck under nodenext and bundler
// resolution, with TypeScript 5.9 (the oldest @types/react 19 supports
// is 5.6) and the package's own; then node imports the installed entry.
// The TypeScripts are cached under the repository's .cache/sdk-consumer/
// (shared with web/sdk/scripts/consumer.mjs).
//
//   node scripts/consumer.mjs
//
// Fails with one line per failure.

import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const cache = join(root, "..", "..", ".cache", "sdk-consumer");
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const version = (dir) => JSON.parse(readFileSync(join(root, "node_modules", dir, "package.json"), "utf8")).version;
const TYPESCRIPTS = ["5.9.3", version("typescript")];
const PACKED = ["CHANGELOG.md", "README.md", "dist/tabrelay-react-elements.d.ts", "dist/tabrelay-react.d.ts", "dist/tabrelay-react.js", "package.json"];

const failures = [];
const work = mkdtempSync(join(tmpdir(), "tabrelay-react-consumer-"));
try {
  const [info] = JSON.parse(run(npm, ["pack", "--json", "--pack-destination", work, "--loglevel=error"], root));
  const files = info.files.map((f) => f.path).sort();
  if (files.join() !== PACKED.join()) failures.push(`the tarball holds ${files.join(", ")}; want ${PACKED.join(", ")}`);
  const [sdk] = JSON.parse(run(npm, ["pack", "--json", "--pack-destination", work, "--loglevel=error"], join(root, "..", "sdk")));
  const project = join(work, "app");
  mkdirSync(project);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  run(npm, ["install", "--no-audit", "--no-fund", "--loglevel=error", "--prefer-offline", join(work, sdk.filename), join(work, info.filename),
    `react@${version("react")}`, `@types/react@${version("@types/react")}`], project);
  cpSync(join(root, "test/consumer"), join(project, "src"), { recursive: true });
  for (const ts of TYPESCRIPTS) {
    for (const [name, resolution] of [["nodenext", "nodenext"], ["bundler", "bundler"]]) {
      const config = join(project, `tsconfig.${name}.json`);
      writeFileSync(config, JSON.stringify({
        compilerOptions: {
          module: name === "bundler" ? "esnext" : "nodenext", moduleResolution: resolution, target: "es2022", lib: ["es2022", "dom"], types: [],
          jsx: "react-jsx", strict: true, exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true, skipLibCheck: false, noEmit: true,
        },
        include: ["src"],
      }));
      const r = spawnSync(process.execPath, [typescript(ts), "-p", config], { cwd: project, encoding: "utf8" });
      if (r.status !== 0) failures.push(`TypeScript ${ts}, ${name} resolution:\n${(r.stdout + r.stderr).trim()}`);
    }
  }
  const imported = spawnSync(process.execPath, ["--input-type=module", "-e",
    'const m = await import("@tabrelay/react"); if (typeof m.createTabrelay !== "function") throw new Error("no createTabrelay");'],
  { cwd: project, encoding: "utf8" });
  if (imported.status !== 0) failures.push(`node cannot import the installed package: ${imported.stderr.trim()}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
if (failures.length) {
  for (const f of failures) console.error("consumer: " + f);
  process.exit(1);
}
console.log(`consumer: the packed @tabrelay/react type-checks with TypeScript ${TYPESCRIPTS.join(", ")} (nodenext, bundler) and imports in node`);

/** typescript returns the tsc of version: the package's own, or one installed into the cache once. */
function typescript(v) {
  if (v === version("typescript")) return join(root, "node_modules/typescript/bin/tsc");
  const dir = join(cache, "typescript-" + v);
  const tsc = join(dir, "node_modules/typescript/bin/tsc");
  if (!existsSync(tsc)) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "package.json"), JSON.stringify({ private: true }));
    run(npm, ["install", "--no-audit", "--no-fund", "--loglevel=error", "--no-package-lock", `typescript@${v}`], dir);
  }
  return tsc;
}

/** run runs a command in cwd and returns its stdout; a failure ends the script with its output. */
function run(cmd, args, cwd) {
  try {
    return execFileSync(cmd, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (e) {
    console.error(`consumer: ${cmd} ${args.slice(0, 2).join(" ")} failed: ${(e.stdout ?? "") + (e.stderr ?? e.message)}`.trim());
    process.exit(1);
  }
}
