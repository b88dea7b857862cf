// Type-checked by `npm run check`, never run: the README's quick start
// against the committed dist/tabrelay.d.ts, so the published types are
// whole and say what the README says.

import { connect, defineApp, Reply, ToolError, type Status } from "../dist/tabrelay.js";

const app = defineApp({
  version: "notes-1",
  app: { name: "notes", title: "Notes" },
  instructions: "These tools act in the person's open Notes tab.",
  tools: [
    { name: "list_notes", description: "Lists the notes.", inputSchema: { type: "object" }, result: "cells" },
    {
      name: "note", description: "Adds or deletes a note.", result: "none", permissions: ["change"],
      inputSchema: { type: "object", properties: { action: { enum: ["add", "delete"] }, text: { type: "string" } } },
      actions: [{ name: "add" }, { name: "delete", permissions: ["deletes-saved"] }],
    },
  ],
});

const tab = connect({
  relay: "https://relay.example.com",
  app,
  handlers: {
    list_notes: () => ["a", "b"],
    note: {
      add: (call) => {
        call.step();
        return new Reply({ data: { added: call.arguments["text"] } });
      },
      delete: (call) => {
        if (call.signal.aborted) throw new ToolError("Stopped.");
        return null;
      },
    },
  },
});
tab.onStatus((s: Status) => (s.state === "reconnecting" ? s.seconds : s.state === "stopped" ? s.message : s.state));

connect({
  relay: "https://relay.example.com",
  app,
  // @ts-expect-error: every declared tool needs its handler
  handlers: { list_notes: () => [] },
});
