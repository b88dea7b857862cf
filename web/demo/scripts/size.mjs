// Prints the size of the built files, raw and gzip: the page (app.js, the
// SDK bundled in) and the view card (card.html).

import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
for (const file of ["dist/app.js", "dist/card.html", "dist/tools.js", "bundle.json"]) {
  const bytes = readFileSync(join(root, file));
  console.log(`${file.padEnd(16)} ${String(bytes.length).padStart(7)} B  ${String(gzipSync(bytes, { level: 9 }).length).padStart(6)} B gzip`);
}
