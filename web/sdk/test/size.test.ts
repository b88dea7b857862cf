// The size budgets of the built modules (issue 11): the core at most 11.25 KiB gzip (10 until issue 24 item 10 put the
// argument check in the one tool call, 11 until issue 27 read each relay frame once into a typed message), the UI elements 20 KiB,
// the chat (issue 28, a module of its own so that the core does not grow) 16 KiB.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { gzipSync } from "node:zlib";
import { packageDir } from "./paths.js";

export const CORE_BUDGET_GZIP = 11.25 * 1024;
export const UI_BUDGET_GZIP = 20 * 1024;
export const CHAT_BUDGET_GZIP = 16 * 1024;

for (const [file, budget] of [["tabrelay.js", CORE_BUDGET_GZIP], ["tabrelay-ui.js", UI_BUDGET_GZIP], ["tabrelay-chat.js", CHAT_BUDGET_GZIP]] as const) {
  test(`dist/${file} is within ${budget / 1024} KiB gzip`, (t) => {
    const module = readFileSync(join(packageDir, "dist", file));
    const gzip = gzipSync(module, { level: 9 }).length;
    t.diagnostic(`dist/${file}: ${module.length} bytes, ${gzip} bytes gzip (budget ${budget})`);
    assert.ok(gzip <= budget, `${gzip} bytes gzip is over the ${budget}-byte budget`);
  });
}
