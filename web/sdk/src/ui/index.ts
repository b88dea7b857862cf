// @tabrelay/tab/ui: the default UI elements. Importing it defines
// <tabrelay-connect> (in a browser); the logic behind it is exported too,
// for an app that builds its own.

import { defineConnectElement } from "./connect.js";

export { defineConnectElement, TabrelayConnect, type ConnectClient } from "./connect.js";
export { ERROR_WORDS, errorWords, hostOf, ScopeModel, whoAsks, type PickerTool, type WhoAsks } from "./model.js";

defineConnectElement();
