// Type-checked, never run: a consumer's imports of both entries by the
// package's own names, as an app that installed the packed tarball writes
// them. scripts/consumer.mjs checks this file in a fresh project with
// the oldest and the newest TypeScript the package supports, under
// nodenext and bundler resolution, without skipLibCheck; `npm run check`
// checks it here too (the package resolves its own name).

import { connect, defineApp, RelayError, type Status, type ToolCall } from "@tabrelay/tab";
import {
  createPermissions, ScopeModel, TabrelayConfirm, TabrelayConnect, TabrelayConnections, type Question,
} from "@tabrelay/tab/ui";

export const app = defineApp({
  version: "todo-1",
  app: { name: "todo", title: "Todo" },
  instructions: "These tools act in the person's open Todo tab.",
  tools: [
    { name: "list_todos", description: "Lists the todos.", inputSchema: { type: "object" }, result: "cells" },
    { name: "add_todo", description: "Adds a todo.", result: "none", permissions: ["change"],
      inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] } },
  ],
});

const permissions = createPermissions({ app });
const tab = connect({
  relay: "https://relay.example.com",
  app,
  permissions,
  handlers: {
    list_todos: () => [{ text: "milk", done: false }],
    add_todo: (call: ToolCall) => ({ added: call.id }),
  },
});
tab.onStatus((s: Status) => s.state);

export const panel: TabrelayConnect | null = document.querySelector("tabrelay-connect");
if (panel) {
  panel.app = app;
  panel.client = tab;
}
export const card: TabrelayConfirm | null = document.querySelector("tabrelay-confirm");
if (card) card.permissions = permissions;
export const list: TabrelayConnections | null = document.querySelector("tabrelay-connections");
permissions.onQuestions(() => permissions.questions.map((q: Question) => q.who));
export const picker = new ScopeModel(app, []);
export const failed = (e: unknown) => e instanceof RelayError && e.code;
