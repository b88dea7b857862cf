// Prints the size of the built files, raw and gzip: the budget of the
// core is 12 KiB gzip, of the UI elements 22 KiB, of the chat 16 KiB (test/size.test.ts
// enforces them).

import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const dist = join(dirname(fileURLToPath(import.meta.url)), "..", "dist");
const budgets = { "tabrelay.js": 12288, "tabrelay-ui.js": 22528, "tabrelay-chat.js": 16384 };
for (const file of ["tabrelay.js", "tabrelay.d.ts", "tabrelay-ui.js", "tabrelay-ui.d.ts", "tabrelay-ui.css", "tabrelay-ui-de.js", "tabrelay-chat.js", "tabrelay-chat.d.ts", "tabrelay-bundle.js"]) {
  const bytes = readFileSync(join(dist, file));
  const gzip = gzipSync(bytes, { level: 9 }).length;
  console.log(`${file.padEnd(20)} ${String(bytes.length).padStart(7)} B  ${String(gzip).padStart(6)} B gzip${budgets[file] ? `  (budget ${budgets[file]}, ${Math.round((gzip / budgets[file]) * 100)}%)` : ""}`);
}
