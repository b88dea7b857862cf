// @tabrelay/tab/chat: the chat in the tab with the person's own API key
// (issue 28), beside the connector. Importing it defines <tabrelay-chat>
// (in a browser); the chat, its providers and its parts are exported for
// an app that builds its own.

export { Chat, type ChatGate, type ChatOptions, type ChatState } from "./session.js";
export { defineChatElement, TabrelayChat } from "./element.js";
export { anthropicProvider, anthropicBody, ANTHROPIC_BASE_URL } from "./anthropic.js";
export { openaiProvider, openaiBody, OPENAI_BASE_URL } from "./openai.js";
export { scriptedProvider, type ScriptedProvider, type ScriptStep } from "./scripted.js";
export {
  FAILURE_KINDS, ProviderFailure,
  type AssistantPart, type ChatTool, type ModelInfo, type ModelReply, type ModelRequest, type Provider,
  type ProviderOptions, type StopReason, type ToolOutcome, type Usage, type WireMessage,
} from "./contract.js";
export { Keys, defaultKeyStores, type KeyStores } from "./keys.js";
export { ASK_PERSON, ASK_PERSON_TOOL, askOf, type Ask } from "./ask.js";
export { Conversation, noteText, sentLine, wireOf, WITHHELD, type Entry, type Note, type ResultEntry, type Sent } from "./conversation.js";
export { runTurn, RETRIES, type LoopCall, type LoopOptions, type TurnEnd } from "./loop.js";
export { encodeResult, escapeJSON, validDataTag, DEFAULT_DATA_TAG, RESULT_TEXT_CHARS, type Encoded } from "./encode.js";
export { exportMarkdown, markdownSafe, stripDataMarks } from "./export.js";

// Imported after the exports: the bundle then holds the core's modules
// first, as the UI's does, and a page that bundles both (the demo's)
// compresses about 1.8 KB better than with the element's modules first.
import { defineChatElement } from "./element.js";

defineChatElement();
