// Type-checked, never run: a consumer's use of the chat entry
// (@tabrelay/tab/chat) by the package's own name, as uses.ts does the
// others (scripts/consumer.mjs checks it in a fresh project).

import { defineApp, type FailureKind } from "@tabrelay/tab";
import { createPermissions } from "@tabrelay/tab/ui";
import {
  anthropicProvider, Chat, openaiProvider, ProviderFailure, scriptedProvider, TabrelayChat,
  type ModelReply, type Provider, type TurnEnd,
} from "@tabrelay/tab/chat";

const app = defineApp({
  version: "chat-1", app: { name: "todo", title: "Todo" }, instructions: "Todo tools.",
  tools: [{ name: "list_todos", description: "Lists the todos.", inputSchema: { type: "object" }, result: "cells" }],
});
const permissions = createPermissions({ app });
const reply: ModelReply = { stop: "end", parts: [{ type: "text", text: "Hello." }] };
const providers: Provider[] = [
  anthropicProvider({ baseURL: "https://gateway.example.com/anthropic" }),
  openaiProvider(),
  scriptedProvider([reply, new ProviderFailure("busy", "Overloaded")]),
];
export const chat = new Chat({ app, handlers: { list_todos: () => [] }, permissions, providers, budget: 50_000 });
export const kind: FailureKind = "too-long";
export const ended: Promise<TurnEnd> = chat.send("How many todos?");
const bar = document.querySelector<TabrelayChat>("tabrelay-chat");
if (bar) bar.chat = chat;
