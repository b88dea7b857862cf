// Prints the size of the built files, raw and gzip: the budget of the
// core is 10 KiB gzip (test/size.test.ts enforces it).

import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const dist = join(dirname(fileURLToPath(import.meta.url)), "..", "dist");
for (const file of ["tabrelay.js", "tabrelay.d.ts", "tabrelay-bundle.js"]) {
  const bytes = readFileSync(join(dist, file));
  const gzip = gzipSync(bytes, { level: 9 }).length;
  console.log(`${file.padEnd(20)} ${String(bytes.length).padStart(7)} B  ${String(gzip).padStart(6)} B gzip${file === "tabrelay.js" ? `  (budget 10240, ${Math.round((gzip / 10240) * 100)}%)` : ""}`);
}
