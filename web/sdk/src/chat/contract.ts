// The providers' contract (seed 000 "The chat bar", Providers): one
// interface every model provider the chat can use implements — the
// Anthropic Messages API (anthropic.ts), the OpenAI Responses API
// (openai.ts), and a scripted provider (scripted.ts) — so the agent loop
// (loop.ts) knows no provider. A failure is a ProviderFailure of one kind;
// the loop waits out rate, busy and network, asks again once after an
// unreadable answer, and summarises after too-long.

import type { FailureKind } from "../chat-messages.js";
import type { Media } from "../protocol.js";
import type { JsonObject } from "../schema.js";

/** The kinds of failure a provider's answer maps to. */
export const FAILURE_KINDS: readonly FailureKind[] = ["auth", "permission", "quota", "rate", "busy", "network", "unreadable", "model", "too-long", "request"];

/** ProviderFailure is what a provider throws; message is the provider's own words, kept for the person's details. */
export class ProviderFailure extends Error {
  override name = "ProviderFailure";
  constructor(readonly kind: FailureKind, message: string, readonly retryAfterMs?: number) {
    super(message);
  }
}

/** A tool as a model gets it: no permission labels, never changed within a conversation. */
export interface ChatTool {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: Readonly<Record<string, unknown>>;
}

/** One part of a model's reply: text, or a tool call. */
export type AssistantPart =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "call"; readonly id: string; readonly name: string; readonly arguments: JsonObject };

/** A tool call's outcome as the model reads it: the encoded text (between the data tags) and the pictures sent. */
export interface ToolOutcome {
  readonly id: string;
  readonly name: string;
  readonly text: string;
  readonly isError: boolean;
  readonly images?: readonly Media[];
}

/** The conversation as a provider sends it: the person's words, the model's replies, the tools' outcomes. */
export type WireMessage =
  | { readonly role: "user"; readonly text: string }
  | { readonly role: "assistant"; readonly parts: readonly AssistantPart[] }
  | { readonly role: "tool"; readonly results: readonly ToolOutcome[] };

/** Tokens of one model call; a provider fills it as it learns them, so a stopped or failed call is counted too. */
export interface Usage {
  input: number;
  output: number;
}

export interface ModelRequest {
  readonly model: string;
  readonly system: string;
  readonly messages: readonly WireMessage[];
  readonly tools: readonly ChatTool[];
  readonly maxTokens: number;
  readonly signal: AbortSignal;
  /** Filled as the provider learns the call's tokens. */
  readonly usage: Usage;
  /** Called with each piece of text as it streams. */
  readonly onText?: ((delta: string) => void) | undefined;
}

/** Why a reply ended: done, tool calls to run, the output limit, or a refusal. */
export type StopReason = "end" | "tools" | "length" | "refusal";

export interface ModelReply {
  readonly parts: readonly AssistantPart[];
  readonly stop: StopReason;
}

/** A model as the provider's API lists it; contextTokens when the API says. */
export interface ModelInfo {
  readonly id: string;
  readonly name: string;
  readonly contextTokens?: number;
}

/** A model provider: where its API is (the only origin its key is sent to), its models, one call. */
export interface Provider {
  readonly id: string;
  /** The provider's name for the person and the confirm card's "Claude (chat)". */
  readonly name: string;
  /** The origin of the API's base URL: a key of this provider goes there and nowhere else. */
  readonly origin: string;
  listModels(key: string, signal: AbortSignal): Promise<ModelInfo[]>;
  send(request: ModelRequest, key: string): Promise<ModelReply>;
}

/** Options of the HTTP providers: a base URL (a gateway or proxy) and the fetch to use. */
export interface ProviderOptions {
  readonly baseURL?: string;
  readonly fetch?: typeof fetch;
}
