// @tabrelay/tab/ui: the default UI elements. Importing it defines
// <tabrelay-connect>, <tabrelay-connections>, <tabrelay-confirm>, <tabrelay-activity>,
// <tabrelay-data-switch>, <tabrelay-notice> and <tabrelay-permissions> (in a browser); the logic behind them is exported
// too, for an app that builds its own, and the table of their sentences
// (setMessages: another language; @tabrelay/tab/ui/de is the German).

import { defineActivityElement } from "./activity-line.js";
import { defineConfirmElement } from "./confirm-card.js";
import { defineConnectElement } from "./connect.js";
import { defineConnectionsElement } from "./connections.js";
import { defineDataSwitchElement } from "./data-switch.js";
import { defineNoticeElement } from "./notice.js";
import { definePermissionsElement } from "./permissions.js";

export { defineConnectElement, TabrelayConnect, type ConnectClient } from "./connect.js";
export {
  ANOTHER_DOCUMENT, createPermissions, decide, defaultPermissionsEnvironment, DEFAULT_MODE, HEAVY_MS, MODES, Permissions, titleOf,
  type Answer, type Confirmer, type Decision, type Estimate, type Mode, type PermissionsEnvironment, type PermissionsOptions,
  type Question, type Setting, type Settings,
} from "./permissions-model.js";
export { DATA_SENTENCES, type AgentDocument } from "./data-scope.js";
export { Turns, TurnStopped, whoOf, type StepRecord, type TurnLine, type TurnRecord, type UndoTurn } from "./turns.js";
export { defineConfirmElement, TabrelayConfirm } from "./confirm-card.js";
export { defineActivityElement, TabrelayActivity } from "./activity-line.js";
export { defineDataSwitchElement, TabrelayDataSwitch } from "./data-switch.js";
export { defineNoticeElement, TabrelayNotice } from "./notice.js";
export { defineConnectionsElement, TabrelayConnections } from "./connections.js";
export {
  definePermissionsElement, kindsUsed, settingsView, TabrelayPermissions,
  type KindRow, type ModeOption, type SettingsView,
} from "./permissions.js";
export {
  connectionWords, ConnectionsPanel, scopeWords,
  type ConnectionRow, type ConnectionsClient, type ConnectionWords,
} from "./connections-model.js";
export {
  errorWords, hostOf, ScopeModel, typedWords, whoAsks, type PickerTool, type TypedWords, type WhoAsks,
} from "./connect-model.js";
export { setStyleNonce } from "../dom/elements.js";
export { messages, setMessages, statusWords, type ConnectionsMessages, type ConnectMessages, type ErrorCode, type Messages } from "./messages.js";
export { en } from "./messages-en.js";

defineConnectElement();
defineConnectionsElement();
defineConfirmElement();
defineActivityElement();
defineDataSwitchElement();
defineNoticeElement();
definePermissionsElement();
