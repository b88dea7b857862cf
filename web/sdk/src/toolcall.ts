// The one tool call (issue 28 item 1; seed 000 "Three ways in, one tool
// call"): every way in — the connector through the relay (calls.ts), the
// chat in the tab (chat/), a local agent — runs a call with
// checkToolCall and runToolCall: the declared catalogue, the person's gate
// (permissions, the confirm card, the activity line, the data switch —
// keyed on call.connection, never on the way in), the app's handler, and
// what it returned or threw as a result.

import { Reply, ToolError, type ActionHandlers, type CallGate, type SentCall, type ToolCall, type ToolHandler } from "./calls.js";
import { argumentsProblem } from "./arguments.js";
import { refusal } from "./notes.js";
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

/**
 * checkToolCall finds the tool and handler of a call and checks its
 * arguments against the tool's inputSchema (arguments.ts), or returns the
 * refusal the agent reads: the SDK's own sentence, a name it quotes marked
 * (notes.ts).
 */
export function checkToolCall(t: ToolCallTarget, name: unknown, raw: unknown): CheckedCall | TabResult {
  const tool = typeof name === "string" ? t.app.tools.find((x) => x.name === name) : undefined;
  if (!tool) return refusal("This app has no tool {0}; nothing was done.", String(name));
  if (!isRecord(raw)) return refusal("The arguments must be a JSON object; nothing was done.");
  const handler = (t.handlers as Readonly<Record<string, ToolHandler | ActionHandlers>>)[tool.name];
  const action = raw["action"];
  if (tool.actions?.length && (typeof action !== "string" || !tool.actions.some((a) => a.name === action))) {
    const names = tool.actions.map((a) => a.name).join(", ");
    return refusal(`The tool “${tool.name}” needs an "action" argument, one of: ${names}; nothing was done.`);
  }
  const problem = argumentsProblem(tool.inputSchema, raw);
  if (problem) {
    const [at, keyword, detail] = problem;
    return refusal(`The arguments of “${tool.name}” break its inputSchema's ${keyword}${detail ? ` (${detail})` : ""} at {0}; nothing was done.`, at || "/");
  }
  const one = typeof action === "string" && tool.actions?.length ? action : undefined;
  const run = typeof handler === "function" ? handler : one && handler?.[one];
  return run ? { tool, handler: run, action: one, args: raw } : refusal(`The tool “${tool.name}” (${one}) is not handled in this tab.`);
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
    if (!t.gate) return await handle(call);
    // The person may have turned the data switch on while it ran: sending checks again.
    return sending(t, sentCall(call.id, c), await t.gate.run(call, c.tool, handle));
  } catch (err) {
    return failure(err, call.signal);
  }
}

/**
 * sentCall is a checked call as the gate's sending sees it: the tool, the
 * action and the arguments checkToolCall decided (no action for a tool
 * that declares none, whatever its arguments hold). A result answered
 * again (a redelivery, another tab's) is sent with the same.
 */
export function sentCall(id: string, c: CheckedCall): SentCall {
  return { id, tool: c.tool, action: c.action, arguments: c.args };
}

/** sending passes a call's result through the gate's sending, when it has one. */
export function sending(t: ToolCallTarget, call: SentCall, result: TabResult): TabResult {
  return t.gate?.sending ? t.gate.sending(call, result) : result;
}

/** cannotAsk is a call's confirm where no gate asks the person: every way in's own, until the permissions replace it. */
export function cannotAsk(): Promise<void> {
  return Promise.reject(new ToolError("This tab cannot ask the person; the call did not go on."));
}

function failure(err: unknown, signal: AbortSignal): TabResult {
  if (err instanceof ToolError) return err.data === undefined ? { error: err.message } : { error: err.message, data: err.data };
  if (signal.aborted) return refusal("The call was stopped before it finished.");
  const message = err instanceof Error ? err.message : String(err);
  return { error: "The tool failed in the tab: " + message };
}
