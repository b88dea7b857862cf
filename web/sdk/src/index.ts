// @tabrelay/tab: makes a web app's tabs reachable by agents through a
// tabrelay relay. The public API is what this file exports; README.md
// describes it.

export { connect, TabClient, socketURL, type ClientOptions, type PermissionsAnswer, type PermissionsGate, type PermissionsQuery, type Status } from "./client.js";
export {
  CallCancelled, Reply, ToolError, type CallGate, type SentCall,
  type ActionHandlers, type Handlers, type OnlyDeclared, type ToolArguments, type ToolCall, type ToolHandler,
} from "./calls.js";
export {
  CONNECT_FRAGMENT, RelayError, REQUEST_MESSAGES, takeConnectCode,
  type ConnectInfo, type ConnectionInfo, type LocationLike, type ScopeEntry,
} from "./requests.js";
export { STOP_MESSAGES, type StopReason } from "./codes.js";
export {
  checkApp, defineApp, PERMISSION_KINDS, permissionKindsOf, toBundle,
  type ActionDeclaration, type AppDeclaration, type ConfirmAt, type DataScope, type PermissionKind, type ResultClass,
  type ToolAnnotations, type ToolDeclaration, type ToolName,
} from "./tools.js";
export { PROTOCOL_VERSION } from "./wire.js";
export {
  type CancelReason, type Connection, type ConnectionKind, type EmbeddedResource, type LogLevel, type Media, type Note, type Permission, type TabResult,
} from "./protocol.js";
export { note, noteText, refusal, withNote } from "./notes.js";
export type { FromSchema, JsonChecked, JsonObject, JsonValue } from "./schema.js";
export type { ChatMessages, FailureKind } from "./chat-messages.js";
export type { Environment, LocksLike, PageLike, SocketFactory, SocketLike, StorageLike, TimerId } from "./env.js";
