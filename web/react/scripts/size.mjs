// Prints the size of the built module, raw and gzip (react and the SDK
// are the app's own imports, not in it).

import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const dist = join(dirname(fileURLToPath(import.meta.url)), "..", "dist");
for (const file of ["tabrelay-react.js", "tabrelay-react.d.ts", "tabrelay-react-elements.d.ts"]) {
  const bytes = readFileSync(join(dist, file));
  console.log(`${file.padEnd(30)} ${String(bytes.length).padStart(7)} B  ${String(gzipSync(bytes, { level: 9 }).length).padStart(6)} B gzip`);
}
