// Builds the example: dist/app.js (the page: React, @tabrelay/react and
// the SDK bundled into one minified ES module) and dist/tools.js (the
// declaration, for node), then bundle.json from it with the SDK's
// tabrelay-bundle (the relay's RELAY_BUNDLE).
//
//   node scripts/build.mjs [--outdir dist]
//
// @tabrelay/react and @tabrelay/tab are linked (file:), and web/react has
// react and the SDK in its own node_modules (its dev dependencies): the
// plugin oneCopy resolves react, react-dom and @tabrelay/tab from this
// app wherever they are imported, so that the page holds one React (two
// break the hooks) and one SDK. The output is deterministic:
// scripts/web-test.sh rebuilds into a temporary directory and compares.

import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const outdir = args[0] === "--outdir" && args[1] ? args[1] : join(root, "dist");
mkdirSync(outdir, { recursive: true });

/** oneCopy resolves the shared packages (a peer dependency's imports) from this app's root. */
const oneCopy = {
  name: "one-copy",
  setup(build) {
    build.onResolve({ filter: /^(react|react-dom|@tabrelay\/tab)(\/|$)/ }, (args) =>
      args.pluginData === "one-copy" ? undefined : build.resolve(args.path, { kind: args.kind, resolveDir: root, pluginData: "one-copy" }));
  },
};
const common = { bundle: true, format: "esm", target: "es2022", legalComments: "none", logLevel: "warning", plugins: [oneCopy] };
await esbuild.build({
  ...common, entryPoints: [join(root, "src/main.tsx")], outfile: join(outdir, "app.js"), minify: true, platform: "browser",
  jsx: "automatic", define: { "process.env.NODE_ENV": '"production"' },
});
await esbuild.build({ ...common, entryPoints: [join(root, "src/tools.ts")], outfile: join(outdir, "tools.js"), platform: "node" });
if (outdir === join(root, "dist")) {
  execFileSync(process.execPath, [join(root, "node_modules/@tabrelay/tab/dist/tabrelay-bundle.js"), "--app", join(outdir, "tools.js"), "--out", join(root, "bundle.json")], { stdio: "inherit" });
}
