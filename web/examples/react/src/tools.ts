// The app's declaration: its tools, typed from their inputSchema (defineApp
// keeps it literal). scripts/build.mjs builds it for node too, and writes
// bundle.json from it with tabrelay-bundle: the relay's RELAY_BUNDLE.

import { defineApp } from "@tabrelay/tab";

export const app = defineApp({
  version: "todo-react-1",
  app: { name: "todo", title: "Todo" },
  instructions: "These tools act in the person's open Todo tab: `list_todos` reads the list, `add_todo` adds to it.",
  answersAt: "the list (`list_todos`)",
  tools: [
    {
      name: "list_todos", title: "List the todos", description: "Lists the todos, oldest first, with whether each is done.",
      inputSchema: { type: "object" }, result: "cells", annotations: { readOnlyHint: true },
    },
    {
      name: "add_todo", title: "Add a todo", description: "Adds a todo at the end of the list; answers with the list's new length.",
      inputSchema: { type: "object", properties: { title: { type: "string", minLength: 1, maxLength: 200 } }, required: ["title"] },
      result: "summaries", permissions: ["change"],
    },
  ],
});
