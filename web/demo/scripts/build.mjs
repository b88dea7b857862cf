// Builds the demo: dist/card.html (the view card: card.ts with its MCP
// Apps bridge, and its CSS, inlined into one HTML document),
// dist/tools.js (the declaration, for node: tabrelay-bundle reads it; the
// card's HTML is its resource's text) and dist/app.js (the page, one
// minified ES module with the SDK bundled in). Into dist/, it then writes
// bundle.json with the SDK's tabrelay-bundle.
//
//   node scripts/build.mjs [--outdir dist]
//
// The output is deterministic, so that scripts/web-test.sh can rebuild into
// a temporary directory and compare with the committed dist/.

import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const outdir = args[0] === "--outdir" && args[1] ? args[1] : join(root, "dist");
mkdirSync(outdir, { recursive: true });

const common = { bundle: true, format: "esm", target: "es2022", legalComments: "none", logLevel: "warning" };

/**
 * card resolves tools.ts's import of the card's HTML. For node (tools.js)
 * it reads the card.html beside tools.js when node imports it, so the
 * card is not held twice in dist/; for the page it is empty (the relay
 * serves the card, from bundle.json).
 */
const card = (contents) => ({
  name: "card-html",
  setup(build) {
    build.onResolve({ filter: /card\.html$/ }, () => ({ path: "card.html", namespace: "card" }));
    build.onLoad({ filter: /.*/, namespace: "card" }, () => ({ contents, loader: "js" }));
  },
});
const nodeCard = 'import { readFileSync } from "node:fs";\nexport default readFileSync(new URL("./card.html", import.meta.url), "utf8");\n';

// 1. The view card: one HTML document, its script and style inline (a
//    host loads it from resources/read, with nothing else to fetch).
const script = await esbuild.build({
  ...common, entryPoints: [join(root, "src/card.ts")], write: false, minify: true, platform: "browser",
});
const js = script.outputFiles[0].text.trim();
if (/<\/script/i.test(js)) throw new Error("card.ts's build holds </script, which would end the inline script");
const html = readFileSync(join(root, "src/card.html"), "utf8")
  .replace("/*CARD_CSS*/", () => readFileSync(join(root, "src/card.css"), "utf8").trim())
  .replace("/*CARD_JS*/", () => js);
writeFileSync(join(outdir, "card.html"), html);

// 2. The declaration for node, its resource's text the card beside it.
await esbuild.build({
  ...common, entryPoints: [join(root, "src/tools.ts")], outfile: join(outdir, "tools.js"),
  platform: "node", packages: "external", plugins: [card(nodeCard)],
});

// 3. The page.
await esbuild.build({
  ...common, entryPoints: [join(root, "src/page.ts")], outfile: join(outdir, "app.js"),
  minify: true, platform: "browser", plugins: [card('export default "";')],
});

// 4. The relay's bundle, from the declaration just built.
if (outdir === join(root, "dist")) {
  const cli = join(root, "node_modules/@tabrelay/tab/dist/tabrelay-bundle.js");
  execFileSync(process.execPath, [cli, "--app", join(outdir, "tools.js"), "--out", join(root, "bundle.json")], { stdio: "inherit" });
}
