// The app's catalogue, declared once in code: the client dispatches calls
// by it, and the tabrelay-bundle CLI writes it as the bundle JSON the
// relay loads (RELAY_BUNDLE, protocol/bundle.go), so the two cannot drift.

import { PROTOCOL_VERSION } from "./wire.js";

/**
 * The kinds of question a call may raise with the person (seed 000, "The
 * person's permissions"): the strictest kind of a call decides whether it
 * runs, is asked about or is refused (createPermissions in the UI entry).
 */
export const PERMISSION_KINDS = [
  "change", "heavy", "writes-file", "deletes-saved", "large-download", "publishes", "pauses-recording",
] as const;
export type PermissionKind = (typeof PERMISSION_KINDS)[number];

/**
 * What a tool's result holds: cell-level data, summaries, or nothing. A
 * tool that says none is unclassified: the data switch refuses it like
 * `cells` until someone classifies it.
 */
export type ResultClass = "cells" | "summaries" | "none";

/**
 * What the data switch ("Agents see names and summaries only") needs to
 * know of a tool's result and arguments. A field is a path into the
 * result's data: keys joined by ".", "*" for every item of an array or
 * value of an object ("columns.*.min").
 */
export interface DataScope {
  /** Fields that each hold one cell's own value (a minimum, a maximum, a median): left out while the switch is on. */
  readonly singleCell?: readonly string[];
  /** Fields that hold pictures (a data: URL, say): left out while on, like the result's images always are. */
  readonly pictures?: readonly string[];
  /** Arguments naming groups the tool summarises over: while on, a group an agent shaped by naming cells is refused. */
  readonly groups?: readonly string[];
}

export interface ActionDeclaration {
  readonly name: string;
  readonly description?: string;
  /** The kinds this action raises; they replace the tool's own for it. */
  readonly permissions?: readonly PermissionKind[];
  /** When the person is asked: "start" (before the handler runs) or "handler" (the handler's ToolCall.confirm); the tool's own otherwise. */
  readonly confirmAt?: ConfirmAt;
}

/** When a call's question is asked: before its handler runs, or by the handler once it knows the cost (ToolCall.confirm). */
export type ConfirmAt = "start" | "handler";

export interface ToolAnnotations {
  readonly readOnlyHint?: boolean;
  readonly destructiveHint?: boolean;
  readonly idempotentHint?: boolean;
  readonly openWorldHint?: boolean;
}

export interface ToolDeclaration {
  readonly name: string;
  readonly title?: string;
  readonly description: string;
  /** A JSON Schema of an object; a tool with actions declares an "action" property. */
  readonly inputSchema: { readonly type: "object"; readonly properties?: Readonly<Record<string, unknown>> } & Readonly<Record<string, unknown>>;
  readonly annotations?: ToolAnnotations;
  readonly actions?: readonly ActionDeclaration[];
  /** Groups tools in lists and panels. */
  readonly family?: string;
  /** What a result holds; without it the tool is unclassified (refused while the data switch is on). */
  readonly result?: ResultClass;
  readonly dataScope?: DataScope;
  /** The ui:// view that shows this tool's results (one of the app's resources). */
  readonly ui?: string;
  /**
   * The kinds every call of this tool raises (an action may say its own).
   * Without them a tool that is not readOnlyHint raises `change`, and
   * `deletes-saved` too when it is destructiveHint (permissionKindsOf).
   */
  readonly permissions?: readonly PermissionKind[];
  /** When the person is asked: "start" (the default) or "handler" (ToolCall.confirm); an action may say its own. */
  readonly confirmAt?: ConfirmAt;
}

/** The app as the bundle describes it (protocol/bundle.go Bundle), less the protocol number. */
export interface AppDeclaration {
  /** The bundle's version; every hello announces it. */
  readonly version: string;
  readonly app: { readonly name: string; readonly title: string };
  readonly instructions: string;
  /**
   * Where an agent can see what a call did once the relay stopped waiting for
   * it (a detach, a timeout, a restart, a closed tab): e.g. "the board
   * (`list_notes`)". The relay's own sentences name it; without it they tell
   * the agent to ask the person. At most 200 characters; every tool it names
   * in backticks must be one of the app's.
   */
  readonly answersAt?: string;
  readonly dataTag?: string;
  readonly tools: readonly ToolDeclaration[];
  /** Passed to the bundle as they are; protocol/bundle.go checks them. */
  readonly resources?: readonly unknown[];
  readonly resourceTemplates?: readonly unknown[];
  readonly prompts?: readonly unknown[];
}

/** The names of an app's tools, as literal types when the app was declared with defineApp. */
export type ToolName<A extends AppDeclaration> = A["tools"][number]["name"];

const NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const APP_NAME = /^[a-z][a-z0-9-]{0,39}$/;

/**
 * defineApp checks an app's declaration and returns it unchanged, typed
 * with its literal tool names so that the handlers can be checked against
 * them. It throws at the first mistake, naming the field, as the relay
 * would when it loads the bundle.
 */
export function defineApp<const A extends AppDeclaration>(app: A): A {
  const problem = checkApp(app);
  if (problem) throw new TypeError("tabrelay: " + problem);
  return app;
}

/** checkApp returns what is wrong with the declaration, or undefined. */
export function checkApp(app: AppDeclaration): string | undefined {
  if (typeof app.version !== "string" || !app.version.trim() || app.version.length > 200) {
    return "version: required, at most 200 characters (every hello carries it)";
  }
  if (!APP_NAME.test(app.app?.name ?? "")) return `app.name: ${JSON.stringify(app.app?.name)} must match ${APP_NAME}`;
  if (!app.app.title?.trim()) return "app.title: required";
  if (!Array.isArray(app.tools) || app.tools.length === 0) return "tools: at least one tool is required";
  const seen = new Set<string>();
  for (const [i, tool] of app.tools.entries()) {
    const problem = checkTool(tool);
    if (problem) return `tools[${i}].${problem}`;
    if (seen.has(tool.name)) return `tools[${i}].name: ${JSON.stringify(tool.name)} appears twice`;
    seen.add(tool.name);
  }
  return checkAnswersAt(app.answersAt) ?? checkNamedTools("instructions", app.instructions, seen) ??
    checkNamedTools("answersAt", app.answersAt, seen);
}

// The rules protocol/bundle.go holds answersAt and the instructions to.
const MAX_ANSWERS_AT = 200;

function checkAnswersAt(s: string | undefined): string | undefined {
  if (s === undefined || s === "") return undefined;
  if (typeof s !== "string") return "answersAt: must be a string";
  if ([...s].length > MAX_ANSWERS_AT) return `answersAt: at most ${MAX_ANSWERS_AT} characters`;
  if (s.trim() !== s || /[<\n\r]/.test(s)) return "answersAt: one line of words, without '<' or spaces around it";
  return undefined;
}

/**
 * checkNamedTools holds a text to the catalogue: every bare name it writes
 * in backticks must be one of the tools, so that it never sends an agent to
 * a tool that does not exist. Backticked text that is no name (with spaces
 * or punctuation, like `notes:add`) is not taken for one.
 */
function checkNamedTools(field: string, text: string | undefined, tools: ReadonlySet<string>): string | undefined {
  for (const [, name] of (text ?? "").matchAll(/`([^`\n]+)`/g)) {
    if (NAME.test(name!) && !tools.has(name!)) return `${field}: names the tool \`${name}\`, which the app does not have`;
  }
  return undefined;
}

function checkTool(tool: ToolDeclaration): string | undefined {
  if (!NAME.test(tool.name ?? "")) return `name: ${JSON.stringify(tool.name)} must match ${NAME}`;
  if (!tool.description?.trim()) return "description: required (hosts show it)";
  if (tool.result !== undefined && !["cells", "summaries", "none"].includes(tool.result)) return `result: ${JSON.stringify(tool.result)} must be "cells", "summaries" or "none"`;
  if (tool.inputSchema?.type !== "object") return 'inputSchema: must be a JSON Schema with type "object"';
  const scope = checkDataScope(tool);
  if (scope) return scope;
  const kinds = checkKinds(tool.permissions, tool.confirmAt);
  if (kinds) return kinds;
  if (!tool.actions?.length) return undefined;
  if (!tool.inputSchema.properties || !("action" in tool.inputSchema.properties)) {
    return 'inputSchema: a tool with actions must declare an "action" property';
  }
  const names = new Set<string>();
  for (const [j, action] of tool.actions.entries()) {
    if (!NAME.test(action.name ?? "") || names.has(action.name)) {
      return `actions[${j}].name: ${JSON.stringify(action.name)} must match ${NAME} and be unique`;
    }
    names.add(action.name);
    const kinds = checkKinds(action.permissions, action.confirmAt);
    if (kinds) return `actions[${j}].${kinds}`;
  }
  return undefined;
}

function checkDataScope(tool: ToolDeclaration): string | undefined {
  const scope = tool.dataScope;
  if (scope === undefined) return undefined;
  for (const key of ["singleCell", "pictures", "groups"] as const) {
    const list: unknown = scope[key];
    if (list === undefined) continue;
    if (!Array.isArray(list) || list.some((f) => typeof f !== "string" || !/^[^.]+(\.[^.]+)*$/.test(f))) {
      return `dataScope.${key}: a list of fields ("a.b", "*" for every item)`;
    }
    const missing = key === "groups" && list.find((a) => !(a in (tool.inputSchema.properties ?? {})));
    if (missing) return `dataScope.groups: ${JSON.stringify(missing)} is not an argument of inputSchema`;
  }
  return undefined;
}

function checkKinds(kinds: readonly string[] | undefined, confirmAt: string | undefined): string | undefined {
  if (![undefined, "start", "handler"].includes(confirmAt)) return 'confirmAt: must be "start" or "handler"';
  const bad = kinds?.find((k) => !(PERMISSION_KINDS as readonly string[]).includes(k));
  if (bad !== undefined) return `permissions: ${JSON.stringify(bad)} is not one of ${PERMISSION_KINDS.join(", ")}`;
  const twice = kinds?.find((k, i) => kinds.indexOf(k) !== i);
  return twice === undefined ? undefined : `permissions: ${JSON.stringify(twice)} appears twice`;
}

/**
 * permissionKindsOf returns the kinds a call of tool (and action) raises:
 * the action's, else the tool's; a tool that declares none raises nothing
 * when readOnlyHint, else `change`, and `deletes-saved` when destructiveHint.
 */
export function permissionKindsOf(tool: ToolDeclaration, action?: string): readonly PermissionKind[] {
  const own = tool.actions?.find((a) => a.name === action)?.permissions ?? tool.permissions;
  const hints = tool.annotations;
  return own ?? (hints?.readOnlyHint ? [] : hints?.destructiveHint ? ["change", "deletes-saved"] : ["change"]);
}

/** toBundle returns the bundle JSON value the relay loads, permission kinds included (protocol/bundle.go). */
export function toBundle(app: AppDeclaration): Record<string, unknown> {
  const problem = checkApp(app);
  if (problem) throw new TypeError("tabrelay: " + problem);
  return withoutUndefined({
    version: app.version,
    protocol: PROTOCOL_VERSION,
    app: app.app,
    instructions: app.instructions,
    answersAt: app.answersAt,
    dataTag: app.dataTag,
    tools: app.tools,
    resources: app.resources,
    resourceTemplates: app.resourceTemplates,
    prompts: app.prompts,
  });
}

function withoutUndefined(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}
