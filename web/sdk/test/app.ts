// The app the tests declare: one tool of each shape.

import { Reply, ToolError, type Handlers, type ToolCall } from "../src/calls.js";
import { noteText } from "../src/notes.js";
import type { TabResult } from "../src/protocol.js";
import { defineApp } from "../src/tools.js";

export const app = defineApp({
  version: "test-1",
  app: { name: "test", title: "Test" },
  instructions: "Test tools.",
  tools: [
    { name: "echo", description: "Answers with its arguments.", inputSchema: { type: "object" }, result: "summaries" },
    {
      name: "counter", description: "Reads or changes a counter.", result: "summaries",
      inputSchema: { type: "object", properties: { action: { type: "string" }, by: { type: "integer" } } },
      actions: [{ name: "get", permissions: [] }, { name: "increment", permissions: ["change"] }],
    },
    { name: "slow", description: "Answers when the test says.", inputSchema: { type: "object" }, result: "none" },
    { name: "fail", description: "Fails.", inputSchema: { type: "object" }, result: "none" },
    { name: "picture", description: "A picture.", inputSchema: { type: "object" }, result: "cells" },
  ],
});

/** TestHandlers counts runs and lets the test finish the slow tool's calls. */
export class TestHandlers {
  runs: ToolCall[] = [];
  counter = 0;
  private finishers = new Map<string, (v: unknown) => void>();

  finish(id: string, value: unknown): void {
    this.finishers.get(id)?.(value);
  }

  readonly handlers: Handlers<typeof app> = {
    echo: (call) => (this.runs.push(call), call.arguments),
    counter: {
      get: (call) => (this.runs.push(call), { counter: this.counter }),
      increment: (call) => {
        this.runs.push(call);
        this.counter += Number(call.arguments["by"] ?? 1);
        call.step();
        return { counter: this.counter };
      },
    },
    slow: (call) => {
      this.runs.push(call);
      return new Promise((resolve) => this.finishers.set(call.id, resolve));
    },
    fail: (call) => {
      this.runs.push(call);
      throw new ToolError("The counter is locked.");
    },
    picture: (call) => (this.runs.push(call), new Reply({ data: { w: 1 }, images: [{ mimeType: "image/png", data: "iVBORw0KGgo=" }] })),
  };
}

/** callMsg is a call message as the relay sends it. */
export function callMsg(id: string, tool: string, args?: unknown, extra: Record<string, unknown> = {}) {
  return {
    type: "call", id, tool, ...(args === undefined ? {} : { arguments: args }),
    connection: { id: "conn_1", kind: "connector", client: "Claude", host: "claude.ai" },
    turn: "turn-1", deadline: 1_767_225_600_000 + 225_000, ...extra,
  };
}

/** said is the sentence of a result: its error, or its notes as plain text. */
export function said(r: unknown): string {
  const result = r as TabResult;
  return result.error ?? (result.notes ?? []).map(noteText).join(" ");
}
