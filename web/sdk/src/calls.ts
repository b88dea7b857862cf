// Calls (docs/tab-protocol.md §7 `call`, §9, §10): each is checked
// against the declared catalogue, claimed in the browser's record so it
// runs at most once, handed to the app's handler with an AbortSignal that
// `cancel` fires, and answered with a result the relay can take.

import type { Environment } from "./env.js";
import type { CallMessage, CancelMessage } from "./frames.js";
import {
  isRecord, overBytes,
  type CancelReason, type Connection, type LogLevel, type Media,
  type EmbeddedResource, type Note, type TabResult,
} from "./protocol.js";
import { noteText, refusal } from "./notes.js";
import { holdsData, SENTENCES, type CallRecord } from "./record.js";
import type { FromSchema, JsonChecked, JsonObject } from "./schema.js";
import { cannotAsk, checkToolCall, runToolCall, sentCall, sending, type CheckedCall } from "./toolcall.js";
import type { AppDeclaration, ToolDeclaration, ToolName } from "./tools.js";
import type { WireProgress, WireTabMessage } from "./wire.js";

/**
 * One call as the app's handler gets it. Args is the type of its
 * arguments: in handlers given to connect, the tool's inputSchema's
 * (FromSchema), with `action` the handler's own for one of an action.
 */
export interface ToolCall<Args = JsonObject> {
  readonly id: string;
  readonly tool: string;
  /** The action named in the arguments, for a tool that declares actions. */
  readonly action: string | undefined;
  /** The arguments as the agent sent them; {} when there were none. */
  readonly arguments: Args;
  /** Who calls: the approved connection, its client's name and host. */
  readonly connection: Connection;
  /** The agent turn this call belongs to (§12). */
  readonly turn: string;
  /** Unix ms by the relay's clock, after which the relay stops waiting; 0 when none waits so (the chat's calls). */
  readonly deadline: number;
  /** How often this call was delivered before; the SDK already made sure it never ran. */
  readonly redelivery: number;
  /** Fires when the relay no longer waits for the call; its reason is a CallCancelled. */
  readonly signal: AbortSignal;
  /** progress reports how far the call is, for a host that asked; it should not go down. */
  progress(progress: number, total?: number, message?: string): void;
  /** log sends a log line of this call to the host. */
  log(level: LogLevel, data: unknown): void;
  /** asking says the app asks the person about this call now (a dialog); answered, that they answered. */
  asking(): void;
  answered(): void;
  /** step says this call changed something in the app (§12); the activity line records it with the turn, for Undo turn. */
  step(): void;
  /**
   * confirm asks the person from the running handler, once it knows the
   * cost (detail: one sentence, "The export is 2.4 MB."), for a tool or
   * action declared with confirmAt: "handler"; it resolves when the call
   * may go on, and rejects with the ToolError the agent reads (declined,
   * refused, moot). Of another tool it resolves at once: the question came
   * before the handler. Without the person's permissions nobody answers.
   */
  confirm(detail: string): Promise<void>;
}

/** A handler returns a JSON value (the result's data), a Reply, or throws a ToolError; or a promise of one. */
export type ToolHandler<Args = JsonObject, R = unknown> = (call: ToolCall<Args>) => R;
/** Handlers of a tool with actions, one per declared action. */
export type ActionHandlers = Readonly<Record<string, ToolHandler>>;

/**
 * Handlers has one handler (or one per action) for every declared tool,
 * each taking its tool's arguments (FromSchema of its inputSchema). Given
 * H, the handlers themselves (connect infers it), each must return JSON
 * (JsonChecked), a Reply, nothing, or a promise of one of these.
 */
export type Handlers<A extends AppDeclaration, H = unknown> = {
  readonly [N in ToolName<A>]: HandlerFor<Extract<A["tools"][number], { readonly name: N }>, N extends keyof H ? H[N] : unknown>;
};

/** OnlyDeclared refuses a handler for a tool the app does not declare. */
export type OnlyDeclared<A extends AppDeclaration, H> = { readonly [K in Exclude<keyof H, ToolName<A>>]: never };

type ArgumentsOf<T> = T extends { readonly inputSchema: infer S } ? FromSchema<S> : JsonObject;
/** ToolArguments is the type of the arguments of app A's tool N: its inputSchema's (FromSchema). */
export type ToolArguments<A extends AppDeclaration, N extends ToolName<A>> = ArgumentsOf<Extract<A["tools"][number], { readonly name: N }>>;
type ActionOf<T> = T extends { readonly actions: readonly (infer X)[] } ? (X extends { readonly name: infer N extends string } ? N : never) : never;
type ResultOf<G> = G extends (call: never) => infer R ? (R extends PromiseLike<infer P> ? PromiseLike<DataOf<P>> : DataOf<R>) : unknown;
type DataOf<R> = R extends Reply<infer D> ? Reply<JsonChecked<D>> : JsonChecked<R>;
type HandlerFor<T, G> = [ActionOf<T>] extends [never] ? ToolHandler<ArgumentsOf<T>, ResultOf<G>>
  : ToolHandler<ArgumentsOf<T>, ResultOf<G>> | {
    readonly [X in ActionOf<T>]: ToolHandler<ArgumentsOf<T> & { readonly action: X }, ResultOf<G extends { readonly [K in X]: infer F } ? F : unknown>>;
  };

/** Reply is a result with more than data: pictures, sound clips, embedded resources, the app's own notes (notes.ts). */
export class Reply<D = unknown> {
  constructor(readonly result: { data?: D; images?: Media[]; audio?: Media[]; resources?: EmbeddedResource[]; notes?: Note[]; isError?: boolean }) {}
}

/** ToolError is a failure the agent should read: its message is the sentence it gets. */
export class ToolError extends Error {
  override name = "ToolError";
  constructor(message: string, readonly data?: unknown) {
    super(message);
  }
}

/** CallCancelled is the AbortSignal's reason when the relay cancels a call. */
export class CallCancelled extends Error {
  override name = "AbortError";
  constructor(readonly reason: CancelReason | string) {
    super(`The relay no longer waits for this call (${reason}).`);
  }
}

/** The longest call id taken: ids name storage keys and locks. */
const MAX_CALL_ID = 256;
/** Results kept in memory to answer a redelivery that the record cannot (too big to store). */
const RECENT_RESULTS = 32;
/** Room for the result message around the result itself. */
const ENVELOPE_BYTES = 1024;

interface Running {
  controller: AbortController;
  asking: boolean;
  cancelled: boolean;
}

/**
 * A CallGate stands between a call and its handler: the person's
 * permissions (createPermissions) are one. run either calls next, with the
 * call or a copy of it (another signal, say), or answers without it.
 */
export interface CallGate {
  run(call: ToolCall, tool: ToolDeclaration, next: (call: ToolCall) => Promise<TabResult>): Promise<TabResult>;
  /**
   * sending, when given, sees each result of a call as it goes out (run
   * here, or answered again from memory or the record) and returns what
   * is sent: the person may have changed their mind since it ran.
   */
  sending?(call: SentCall, result: TabResult): TabResult;
  /** onWithhold, when given, calls listener when the results kept for redeliveries must go. */
  onWithhold?(listener: () => void): () => void;
}

/** A call as sending sees it: from the call message, even when no handler runs. */
export interface SentCall {
  readonly id: string;
  readonly tool: ToolDeclaration;
  readonly action: string | undefined;
  readonly arguments: Readonly<Record<string, unknown>>;
}

export interface CallsOptions<A extends AppDeclaration> {
  app: A;
  handlers: Handlers<A>;
  gate?: CallGate | undefined;
  env: Environment;
  record: CallRecord;
  /** deliver sends msg on the current socket; keep: or on the next one once it is welcomed. */
  deliver(msg: WireTabMessage, keep: boolean): void;
  /** The messages kept for the next socket: results among them are held too. */
  unsent?: WireTabMessage[];
  maxMessageBytes(): number;
  maxArgumentBytes: number;
}

/** A result kept to answer a redelivery, with the call as it was checked (sentCall). */
interface Recent {
  readonly call: SentCall;
  readonly result: TabResult;
}

export class Calls<A extends AppDeclaration> {
  private readonly running = new Map<string, Running>();
  private readonly recent = new Map<string, Recent>();

  constructor(private readonly o: CallsOptions<A>) {
    o.gate?.onWithhold?.(() => {
      const withheld = refusal(SENTENCES.withheld);
      for (const [id, r] of this.recent) if (holdsData(r.result)) this.recent.set(id, { call: r.call, result: withheld });
      o.unsent?.forEach((m, i, all) => m.type === "result" && holdsData(m.result) && (all[i] = { ...m, result: withheld }));
      o.record.withhold();
    });
  }

  /** onCall takes one `call` message; frameLength is its frame's length (UTF-16 units). */
  onCall(msg: CallMessage, frameLength: number): void {
    const id = msg.id;
    const running = this.running.get(id);
    if (running) {
      // Delivered again while it runs here: its result goes out when
      // ready. A redelivery made the relay forget an open question (§9).
      if (running.asking) this.o.deliver({ type: "asking", id }, false);
      return;
    }
    const known = this.recent.get(id);
    if (known) return this.answer(id, sending(this.o, known.call, known.result));
    if (id.length > MAX_CALL_ID) return this.answer(id, refusal("This tab refuses a call id over 256 characters; nothing was done."));
    const checked = this.check(msg, frameLength);
    if (!("handler" in checked)) {
      this.o.env.warn("a call was refused: " + (checked.notes ?? []).map(noteText).join(" "));
      return this.answer(id, checked);
    }
    this.start(id, msg, checked);
  }

  /** onCancel stops a call: the relay no longer waits for it on this socket. */
  onCancel(msg: CancelMessage): void {
    const running = this.running.get(msg.id);
    if (!running) return; // a cancel for a call the tab does not know needs no answer (§9)
    running.cancelled = true;
    running.controller.abort(new CallCancelled(msg.reason));
  }

  /** check finds a call's tool, handler and action, and checks its arguments (toolcall.ts); a refusal when the call cannot run. */
  private check(msg: CallMessage, frameLength: number): CheckedCall | TabResult {
    const checked = checkToolCall(this.o, msg.tool, msg.arguments);
    // The frame bounds the arguments: only a large frame needs measuring.
    const limit = this.o.maxArgumentBytes;
    if ("handler" in checked && overBytes(frameLength, limit, () => JSON.stringify(checked.args))) {
      return refusal(`The arguments are larger than the ${limit} bytes this app takes; nothing was done.`);
    }
    return checked;
  }

  private start(id: string, msg: CallMessage, c: CheckedCall): void {
    const running: Running = { controller: new AbortController(), asking: false, cancelled: false };
    this.running.set(id, running);
    const call = this.toolCall(id, msg, c, running);
    const sent = sentCall(id, c);
    // What the record keeps has passed the gate's sending (runToolCall), and passes it again when sent.
    void this.o.record.claim(id, call.deadline, () => this.run(c, call)).then((claimed) => {
      this.running.delete(id);
      // An answer for now (another tab runs it) is not kept: a redelivery asks the record again.
      if (claimed.by !== "for-now") this.remember(id, { call: sent, result: claimed.result });
      // After a cancel the relay drops any result: none is sent (§7).
      if (!running.cancelled) this.answer(id, sending(this.o, sent, claimed.result));
    });
  }

  private toolCall(id: string, { connection, turn, deadline, redelivery }: CallMessage, c: CheckedCall, running: Running): ToolCall {
    const live = () => this.running.get(id) === running && !running.cancelled;
    const send = (m: WireTabMessage, keep: boolean) => {
      if (live()) this.o.deliver(m, keep); // after its result the relay drops them
    };
    return {
      id, tool: c.tool.name, action: c.action, arguments: c.args as JsonObject, connection,
      turn, deadline, redelivery,
      signal: running.controller.signal,
      progress: (progress, total, message) => {
        // A field of the wrong type makes the relay close with 4103, a stop code.
        if (!Number.isFinite(progress) || (total !== undefined && !Number.isFinite(total))) {
          return this.o.env.warn("progress must be a finite number; this report was dropped");
        }
        const m: WireProgress = { type: "progress", id, progress };
        if (total) m.total = total;
        if (message) m.message = String(message);
        send(m, false);
      },
      // Data JSON leaves out (undefined, a function) would make the relay close with 4103: null instead.
      log: (level, data) => send({ type: "log", id, level: typeof level === "string" ? level : "info", data: ["undefined", "function", "symbol"].includes(typeof data) ? null : data }, false),
      asking: () => {
        running.asking = true;
        send({ type: "asking", id }, true);
      },
      answered: () => {
        running.asking = false;
        send({ type: "answered", id }, true);
      },
      step: () => {
        if (connection.id) this.o.deliver({ type: "step", by: connection.id }, true);
      },
      confirm: cannotAsk, // the person's permissions (the gate) replace it
    };
  }

  /** run runs the call through the one tool call (toolcall.ts) and makes its result sendable; it never throws. */
  private async run(c: CheckedCall, call: ToolCall): Promise<TabResult> {
    return this.sendable(await runToolCall(this.o, c, call));
  }

  /**
   * sendable returns result, or an error result in its place when it could
   * not go out: a result over the message limit would make the relay close
   * the socket with 1009, a stop code.
   */
  private sendable(result: TabResult): TabResult {
    const malformed = malformedPart(result);
    if (malformed) return refusal(`The tool's result could not be sent: its ${malformed} is malformed.`);
    let text: string;
    try {
      text = JSON.stringify({ result }); // as deep as the message it goes in
    } catch {
      return refusal("The tool's result could not be sent: it is not JSON (a cycle, a BigInt, or nesting deeper than this browser writes).");
    }
    const limit = this.o.maxMessageBytes() - ENVELOPE_BYTES;
    if (overBytes(text.length, limit, () => text)) {
      return refusal(`The tool's result was too large to send (over ${limit} bytes).`);
    }
    return result;
  }

  private answer(id: string, result: TabResult): void {
    this.o.deliver({ type: "result", id, result }, true);
  }

  private remember(id: string, r: Recent): void {
    this.recent.set(id, r);
    if (this.recent.size > RECENT_RESULTS) this.recent.delete(this.recent.keys().next().value as string);
  }
}

/**
 * malformedPart names the part of a result whose JSON type is wrong, which
 * would make the relay close the socket with 4103 (a stop code) instead of
 * answering the agent. Plain JavaScript callers are not type-checked.
 */
function malformedPart(r: TabResult): string | undefined {
  const strings = (o: unknown, keys: string[], optional: string[] = []) =>
    isRecord(o) && keys.every((k) => typeof o[k] === "string") && optional.every((k) => o[k] === undefined || typeof o[k] === "string");
  const list = (v: unknown, ok: (item: unknown) => boolean) => v === undefined || (Array.isArray(v) && v.every(ok));
  if (r.error !== undefined && typeof r.error !== "string") return "error";
  if (!list(r.images, (m) => strings(m, ["mimeType", "data"]))) return "images list";
  if (!list(r.audio, (m) => strings(m, ["mimeType", "data"]))) return "audio list";
  if (!list(r.resources, (m) => strings(m, ["uri"], ["mimeType", "text", "blob"]))) return "resources list";
  if (!list(r.notes, (n) => strings(n, ["text"]) && list((n as { names?: unknown }).names, (x) => typeof x === "string"))) return "notes list";
  if (r.isError !== undefined && typeof r.isError !== "boolean") return "isError";
  return undefined;
}

/**
 * checkHandlers throws when the handlers and the declared tools disagree:
 * a tool without a handler, a handler of no tool, or an action handler of
 * no action. The catalogue and the code then cannot drift.
 */
export function checkHandlers(app: AppDeclaration, handlers: Readonly<Record<string, unknown>>): void {
  for (const tool of app.tools) {
    const h = handlers[tool.name];
    if (typeof h === "function") continue;
    if (!isRecord(h)) throw new TypeError(`tabrelay: no handler for the tool ${tool.name}`);
    if (!tool.actions?.length) throw new TypeError(`tabrelay: the tool ${tool.name} has no actions: give it one handler function`);
    for (const a of tool.actions) {
      if (typeof h[a.name] !== "function") throw new TypeError(`tabrelay: no handler for the action ${a.name} of ${tool.name}`);
    }
    for (const key of Object.keys(h)) {
      if (!tool.actions.some((a) => a.name === key)) throw new TypeError(`tabrelay: ${tool.name} declares no action ${key}`);
    }
  }
  for (const name of Object.keys(handlers)) {
    if (!app.tools.some((t) => t.name === name)) throw new TypeError(`tabrelay: a handler for ${name}, which the app does not declare`);
  }
}
