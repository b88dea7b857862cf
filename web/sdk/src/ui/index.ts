// @tabrelay/tab/ui: the default UI elements. Importing it defines
// <tabrelay-connect>, <tabrelay-connections>, <tabrelay-confirm>, <tabrelay-activity>,
// <tabrelay-data-switch> and <tabrelay-permissions> (in a browser); the logic behind them is exported
// too, for an app that builds its own.

import { defineActivityElement } from "./activity-line.js";
import { defineConfirmElement } from "./confirm-card.js";
import { defineConnectElement } from "./connect.js";
import { defineConnectionsElement } from "./connections.js";
import { defineDataSwitchElement } from "./data-switch.js";
import { definePermissionsElement } from "./settings.js";

export { defineConnectElement, TabrelayConnect, type ConnectClient } from "./connect.js";
export {
  createPermissions, decide, defaultPermissionsEnvironment, DEFAULT_MODE, HEAVY_MS, KIND_REASONS, MODES, Permissions, SUMMARIES_ONLY_REFUSAL, titleOf,
  type Answer, type Confirmer, type Decision, type Estimate, type Mode, type PermissionsEnvironment, type PermissionsOptions,
  type Question, type Setting, type Settings,
} from "./permissions.js";
export { Turns, TurnStopped, whoOf, type TurnLine } from "./turns.js";
export { defineConfirmElement, TabrelayConfirm } from "./confirm-card.js";
export { defineActivityElement, TabrelayActivity } from "./activity-line.js";
export { defineDataSwitchElement, SUMMARIES_ONLY_CAVEAT, TabrelayDataSwitch } from "./data-switch.js";
export { defineConnectionsElement, TabrelayConnections } from "./connections.js";
export {
  definePermissionsElement, KIND_WORDS, kindsUsed, MODE_EXPLANATIONS, SETTING_LABELS, settingsView, TabrelayPermissions,
  type KindRow, type ModeOption, type SettingsView,
} from "./settings.js";
export {
  connectionWords, ConnectionsPanel, SCOPE_REFUSED, scopeWords,
  type ConnectionRow, type ConnectionsClient, type ConnectionWords,
} from "./connections-model.js";
export {
  CONFIRM_WORDS, ERROR_WORDS, errorWords, hostOf, LINK_NOTE, ScopeModel, typedWords, whoAsks, type PickerTool, type TypedWords, type WhoAsks,
} from "./model.js";
export { setStyleNonce } from "./controls-dom.js";

defineConnectElement();
defineConnectionsElement();
defineConfirmElement();
defineActivityElement();
defineDataSwitchElement();
definePermissionsElement();
