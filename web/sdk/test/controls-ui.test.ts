// The person's control elements load in node (no DOM): importing the UI
// entry defines nothing and throws nothing, and the elements are exported
// for an app that registers or extends them itself.

import assert from "node:assert/strict";
import { test } from "node:test";
import * as ui from "../src/ui/index.js";

test("the UI entry imports without a DOM and exports the control elements", () => {
  for (const name of ["TabrelayConfirm", "TabrelayActivity", "TabrelayDataSwitch", "TabrelayNotice", "TabrelayPermissions", "settingsView", "createPermissions", "Turns"] as const) {
    assert.equal(typeof ui[name], "function", name);
  }
  assert.match(ui.messages().dataSwitch.caveat, /Not anonymisation/);
});
