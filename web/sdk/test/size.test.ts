// The size budgets of the built modules (issue 11): the core at most 12 KiB gzip (10 until issue 24 item 10 put the
// argument check in the one tool call, 11 until issue 27 read each relay frame once into a typed message,
// 11.25 until issue 24 item 3 checked the data switch at every send and dropped held results), the UI elements 22 KiB (20 until issue 24: the data switch per document, its stripping, the notice),
// the chat (issue 28, a module of its own so that the core does not grow) 16 KiB.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { gzipSync } from "node:zlib";
import { packageDir } from "./paths.js";

export const CORE_BUDGET_GZIP = 12 * 1024;
export const UI_BUDGET_GZIP = 22 * 1024;
export const CHAT_BUDGET_GZIP = 16 * 1024;

for (const [file, budget] of [["tabrelay.js", CORE_BUDGET_GZIP], ["tabrelay-ui.js", UI_BUDGET_GZIP], ["tabrelay-chat.js", CHAT_BUDGET_GZIP]] as const) {
  test(`dist/${file} is within ${budget / 1024} KiB gzip`, (t) => {
    const module = readFileSync(join(packageDir, "dist", file));
    const gzip = gzipSync(module, { level: 9 }).length;
    t.diagnostic(`dist/${file}: ${module.length} bytes, ${gzip} bytes gzip (budget ${budget})`);
    assert.ok(gzip <= budget, `${gzip} bytes gzip is over the ${budget}-byte budget`);
  });
}
