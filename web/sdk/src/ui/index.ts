// @tabrelay/tab/ui: the default UI elements. Importing it defines
// <tabrelay-connect> (in a browser); the logic behind it is exported too,
// for an app that builds its own.

import { defineConnectElement } from "./connect.js";

export { defineConnectElement, TabrelayConnect, type ConnectClient } from "./connect.js";
export {
  createPermissions, decide, defaultPermissionsEnvironment, DEFAULT_MODE, HEAVY_MS, KIND_REASONS, MODES, Permissions, SUMMARIES_ONLY_REFUSAL, titleOf,
  type Answer, type Confirmer, type Decision, type Estimate, type Mode, type PermissionsEnvironment, type PermissionsOptions,
  type Question, type Setting, type Settings,
} from "./permissions.js";
export { Turns, TurnStopped, whoOf, type TurnLine } from "./turns.js";
export { ERROR_WORDS, errorWords, hostOf, ScopeModel, whoAsks, type PickerTool, type WhoAsks } from "./model.js";

defineConnectElement();
