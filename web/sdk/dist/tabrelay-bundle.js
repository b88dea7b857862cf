#!/usr/bin/env node

// src/cli/bundle-cli.ts
import { readFile, writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

// src/protocol.ts
function isRecord(v) {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

// src/wire.ts
var PROTOCOL_VERSION = 1;

// src/tools.ts
var PERMISSION_KINDS = [
  "change",
  "heavy",
  "writes-file",
  "deletes-saved",
  "large-download",
  "publishes",
  "pauses-recording"
];
var NAME = /^[a-zA-Z0-9_-]{1,64}$/;
var APP_NAME = /^[a-z][a-z0-9-]{0,39}$/;
function checkApp(app) {
  if (typeof app.version !== "string" || !app.version.trim() || app.version.length > 200) {
    return "version: required, at most 200 characters (every hello carries it)";
  }
  if (!APP_NAME.test(app.app?.name ?? "")) return `app.name: ${JSON.stringify(app.app?.name)} must match ${APP_NAME}`;
  if (!app.app.title?.trim()) return "app.title: required";
  if (!Array.isArray(app.tools) || app.tools.length === 0) return "tools: at least one tool is required";
  const seen = /* @__PURE__ */ new Set();
  for (const [i, tool] of app.tools.entries()) {
    const problem = checkTool(tool);
    if (problem) return `tools[${i}].${problem}`;
    if (seen.has(tool.name)) return `tools[${i}].name: ${JSON.stringify(tool.name)} appears twice`;
    seen.add(tool.name);
  }
  return checkAnswersAt(app.answersAt) ?? checkNamedTools("instructions", app.instructions, seen) ?? checkNamedTools("answersAt", app.answersAt, seen);
}
var MAX_ANSWERS_AT = 200;
function checkAnswersAt(s) {
  if (s === void 0 || s === "") return void 0;
  if (typeof s !== "string") return "answersAt: must be a string";
  if ([...s].length > MAX_ANSWERS_AT) return `answersAt: at most ${MAX_ANSWERS_AT} characters`;
  if (s.trim() !== s || /[<\n\r]/.test(s)) return "answersAt: one line of words, without '<' or spaces around it";
  return void 0;
}
function checkNamedTools(field, text, tools) {
  for (const [, name] of (text ?? "").matchAll(/`([^`\n]+)`/g)) {
    if (NAME.test(name) && !tools.has(name)) return `${field}: names the tool \`${name}\`, which the app does not have`;
  }
  return void 0;
}
function checkTool(tool) {
  if (!NAME.test(tool.name ?? "")) return `name: ${JSON.stringify(tool.name)} must match ${NAME}`;
  if (!tool.description?.trim()) return "description: required (hosts show it)";
  if (tool.result !== void 0 && !["cells", "summaries", "none"].includes(tool.result)) return `result: ${JSON.stringify(tool.result)} must be "cells", "summaries" or "none"`;
  if (tool.inputSchema?.type !== "object") return 'inputSchema: must be a JSON Schema with type "object"';
  const scope = checkDataScope(tool);
  if (scope) return scope;
  const kinds = checkKinds(tool.permissions, tool.confirmAt);
  if (kinds) return kinds;
  if (!tool.actions?.length) return void 0;
  if (!tool.inputSchema.properties || !("action" in tool.inputSchema.properties)) {
    return 'inputSchema: a tool with actions must declare an "action" property';
  }
  const names = /* @__PURE__ */ new Set();
  for (const [j, action] of tool.actions.entries()) {
    if (!NAME.test(action.name ?? "") || names.has(action.name)) {
      return `actions[${j}].name: ${JSON.stringify(action.name)} must match ${NAME} and be unique`;
    }
    names.add(action.name);
    const kinds2 = checkKinds(action.permissions, action.confirmAt);
    if (kinds2) return `actions[${j}].${kinds2}`;
  }
  return void 0;
}
function checkDataScope(tool) {
  const scope = tool.dataScope;
  if (scope === void 0) return void 0;
  for (const key of ["singleCell", "pictures", "groups"]) {
    const list = scope[key];
    if (list === void 0) continue;
    if (!Array.isArray(list) || list.some((f) => typeof f !== "string" || !/^[^.]+(\.[^.]+)*$/.test(f))) {
      return `dataScope.${key}: a list of fields ("a.b", "*" for every item)`;
    }
    const missing = key === "groups" && list.find((a) => !(a in (tool.inputSchema.properties ?? {})));
    if (missing) return `dataScope.groups: ${JSON.stringify(missing)} is not an argument of inputSchema`;
  }
  return void 0;
}
function checkKinds(kinds, confirmAt) {
  if (![void 0, "start", "handler"].includes(confirmAt)) return 'confirmAt: must be "start" or "handler"';
  const bad = kinds?.find((k) => !PERMISSION_KINDS.includes(k));
  if (bad !== void 0) return `permissions: ${JSON.stringify(bad)} is not one of ${PERMISSION_KINDS.join(", ")}`;
  const twice = kinds?.find((k, i) => kinds.indexOf(k) !== i);
  return twice === void 0 ? void 0 : `permissions: ${JSON.stringify(twice)} appears twice`;
}
function toBundle(app) {
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
    prompts: app.prompts
  });
}
function withoutUndefined(o) {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== void 0));
}

// src/cli/bundle-cli.ts
function warningsOf(app) {
  const out = [];
  for (const tool of app.tools) {
    const bare = !tool.permissions && (!tool.actions?.length || tool.actions.some((a) => !a.permissions));
    if (bare && !tool.annotations?.readOnlyHint) {
      out.push(`${tool.name}: a write tool (no readOnlyHint) that declares no permissions: it counts as change${tool.annotations?.destructiveHint ? " and deletes-saved" : ""}; declare its kinds`);
    }
    if (tool.result === void 0) out.push(`${tool.name}: no result class: while the data switch is on it is refused; classify it as cells, summaries or none`);
  }
  return out;
}
var USAGE = "usage: tabrelay-bundle [--app <module>] --out <bundle.json> [--check]";
function parseArgs(argv) {
  let app;
  let out;
  let check = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--help" || arg === "-h") return "help";
    if (arg === "--check") check = true;
    else if (arg === "--app" || arg === "--out") {
      const value = argv[++i];
      if (!value) return `${arg} needs a value`;
      if (arg === "--app") app = value;
      else out = value;
    } else return `unknown argument ${JSON.stringify(arg)}`;
  }
  return out ? { app, out, check } : "--out is required";
}
async function appModulePath(flag) {
  if (flag) return flag;
  try {
    const pkg = JSON.parse(await readFile("package.json", "utf8"));
    const named = isRecord(pkg) && isRecord(pkg["tabrelay"]) ? pkg["tabrelay"]["app"] : void 0;
    if (typeof named === "string") return named;
  } catch {
  }
  throw new Error('name the app module with --app, or in package.json as "tabrelay": {"app": "./src/tools.js"}');
}
async function loadApp(path) {
  const mod = await import(pathToFileURL(resolve(path)).href);
  const app = isRecord(mod) ? mod["app"] ?? mod["default"] : void 0;
  if (!isRecord(app)) throw new Error(`${path} exports no app (export the defineApp value as "app" or as default)`);
  return app;
}
async function main(argv) {
  const args = parseArgs(argv);
  if (args === "help") {
    console.log(`${USAGE}

Writes the bundle the relay loads (RELAY_BUNDLE) from the defineApp value that --app exports
(as "app" or default); --check exits 1 when the file is not what the declaration makes.`);
    return 0;
  }
  if (typeof args === "string") {
    console.error(`tabrelay-bundle: ${args}
${USAGE}`);
    return 2;
  }
  const path = await appModulePath(args.app);
  const app = await loadApp(path);
  const text = JSON.stringify(toBundle(app), null, 2) + "\n";
  for (const w of warningsOf(app)) console.error(`tabrelay-bundle: warning: ${w}`);
  if (!args.check) {
    await writeFile(args.out, text);
    return 0;
  }
  const onDisk = await readFile(args.out, "utf8").catch(() => void 0);
  if (onDisk === text) return 0;
  console.error(`tabrelay-bundle: ${args.out} is ${onDisk === void 0 ? "missing" : "stale"}; run tabrelay-bundle --out ${args.out}`);
  return 1;
}
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    console.error("tabrelay-bundle: " + (err instanceof Error ? err.message : String(err)));
    process.exit(2);
  }
);
export {
  warningsOf
};
