// The size budget of the built core (issue 11): at most 10 KiB gzip.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { gzipSync } from "node:zlib";
import { packageDir } from "./paths.js";

export const CORE_BUDGET_GZIP = 10 * 1024;

test("dist/tabrelay.js is within 10 KiB gzip", (t) => {
  const module = readFileSync(join(packageDir, "dist", "tabrelay.js"));
  const gzip = gzipSync(module, { level: 9 }).length;
  t.diagnostic(`dist/tabrelay.js: ${module.length} bytes, ${gzip} bytes gzip (budget ${CORE_BUDGET_GZIP})`);
  assert.ok(gzip <= CORE_BUDGET_GZIP, `${gzip} bytes gzip is over the ${CORE_BUDGET_GZIP}-byte budget`);
});
