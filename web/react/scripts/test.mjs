// Runs the unit tests: each test/*.test.ts is bundled by esbuild into
// .test-out/ (react and the SDK stay imports of this package's
// node_modules), then node's own test runner runs them all.

import { spawnSync } from "node:child_process";
import { readdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, ".test-out");
rmSync(out, { recursive: true, force: true });
const tests = readdirSync(join(root, "test")).filter((f) => f.endsWith(".test.ts")).sort();
await esbuild.build({
  entryPoints: tests.map((f) => join(root, "test", f)),
  outdir: out, outExtension: { ".js": ".mjs" },
  bundle: true, format: "esm", platform: "node", target: "node20", packages: "external", logLevel: "warning",
});
const files = tests.map((f) => join(out, f.replace(/\.ts$/, ".mjs")));
const run = spawnSync(process.execPath, ["--test", ...files], { stdio: "inherit", cwd: root });
process.exit(run.status ?? 1);
