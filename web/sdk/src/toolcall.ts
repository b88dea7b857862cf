// The one tool call (issue 28 item 1; seed 000 "Three ways in, one tool
// call"): every way in — the connector through the relay (calls.ts), the
// chat in the tab (chat/), a local agent — runs a call with
// checkToolCall and runToolCall: the declared catalogue, the person's gate
// (permissions, the confirm card, the activity line, the data switch —
// keyed on call.connection, never on the way in), the app's handler, and
// what it returned or threw as a result.

import { Reply, ToolError, type ActionHandlers, type CallGate, type ToolCall, type ToolHandler } from "./calls.js";
import { isRecord, type TabResult } from "./protocol.js";
import type { AppDeclaration, ToolDeclaration } from "./tools.js";

/** What a call runs against: the app's catalogue, its handlers, and the person's gate. */
export interface ToolCallTarget {
  readonly app: AppDeclaration;
  readonly handlers: unknown;
  readonly gate?: CallGate | undefined;
}

/** A call checked against the catalogue: its tool, handler, action and arguments. */
export interface CheckedCall {
  readonly tool: ToolDeclaration;
  readonly handler: ToolHandler;
  readonly action: string | undefined;
  readonly args: Record<string, unknown>;
}

/** checkToolCall finds the tool and handler of a call, or returns the sentence the agent reads. */
export function checkToolCall(t: ToolCallTarget, name: unknown, raw: unknown): CheckedCall | string {
  const tool = typeof name === "string" ? t.app.tools.find((x) => x.name === name) : undefined;
  if (!tool) return `This app has no tool ${JSON.stringify(name)}; nothing was done.`;
  if (!isRecord(raw)) return "The arguments must be a JSON object; nothing was done.";
  const handler = (t.handlers as Readonly<Record<string, ToolHandler | ActionHandlers>>)[tool.name];
  if (typeof handler === "function" && !tool.actions?.length) return { tool, handler, action: undefined, args: raw };
  const action = raw["action"];
  const declared = tool.actions?.some((a) => a.name === action);
  if (typeof action !== "string" || !declared) {
    const names = (tool.actions ?? []).map((a) => a.name).join(", ");
    return `The tool ${tool.name} needs an "action" argument, one of: ${names}; nothing was done.`;
  }
  const run = typeof handler === "function" ? handler : handler?.[action];
  return run ? { tool, handler: run, action, args: raw } : `The action ${action} of ${tool.name} is not handled in this tab.`;
}

/** runToolCall runs a checked call through the gate and the handler; it never throws. */
export async function runToolCall(t: ToolCallTarget, c: CheckedCall, call: ToolCall): Promise<TabResult> {
  const handle = async (call: ToolCall): Promise<TabResult> => {
    try {
      const value = await c.handler(call);
      return value instanceof Reply ? { ...value.result } : value === undefined ? {} : { data: value };
    } catch (err) {
      return failure(err, call.signal);
    }
  };
  try {
    return t.gate ? await t.gate.run(call, c.tool, handle) : await handle(call);
  } catch (err) {
    return failure(err, call.signal);
  }
}

function failure(err: unknown, signal: AbortSignal): TabResult {
  if (err instanceof ToolError) return err.data === undefined ? { error: err.message } : { error: err.message, data: err.data };
  if (signal.aborted) return { error: "The call was stopped before it finished." };
  const message = err instanceof Error ? err.message : String(err);
  return { error: "The tool failed in the tab: " + message };
}
