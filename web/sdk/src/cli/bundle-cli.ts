// tabrelay-bundle: writes the bundle JSON that the relay loads
// (RELAY_BUNDLE) from the app's tool declarations, or with --check fails
// when the file on disk is not what the declarations make.
//
//   tabrelay-bundle [--app ./src/tools.js] --out bundle.json [--check]
//
// The app module is imported by node: it must be JavaScript node can load
// (an ES module) that exports the defineApp value as `app` or as default.
// Without --app, package.json's "tabrelay": {"app": "…"} names it.

import { readFile, writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { isRecord } from "../protocol.js";
import { toBundle, type AppDeclaration } from "../tools.js";

/**
 * warningsOf names what the declaration leaves to the SDK's safe defaults
 * (issue 24 items 2 and 9): a write tool that declares no permission kinds
 * (it counts as `change`), and a tool with no result class (the data
 * switch refuses it until it is classified).
 */
export function warningsOf(app: AppDeclaration): string[] {
  const out: string[] = [];
  for (const tool of app.tools) {
    const bare = !tool.permissions && (!tool.actions?.length || tool.actions.some((a) => !a.permissions));
    if (bare && !tool.annotations?.readOnlyHint) {
      out.push(`${tool.name}: a write tool (no readOnlyHint) that declares no permissions: it counts as change${tool.annotations?.destructiveHint ? " and deletes-saved" : ""}; declare its kinds`);
    }
    if (tool.result === undefined) out.push(`${tool.name}: no result class: while the data switch is on it is refused; classify it as cells, summaries or none`);
  }
  return out;
}

const USAGE = "usage: tabrelay-bundle [--app <module>] --out <bundle.json> [--check]";

interface Args {
  app: string | undefined;
  out: string;
  check: boolean;
}

function parseArgs(argv: readonly string[]): Args | string | "help" {
  let app: string | undefined;
  let out: string | undefined;
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

async function appModulePath(flag: string | undefined): Promise<string> {
  if (flag) return flag;
  try {
    const pkg: unknown = JSON.parse(await readFile("package.json", "utf8"));
    const named = isRecord(pkg) && isRecord(pkg["tabrelay"]) ? pkg["tabrelay"]["app"] : undefined;
    if (typeof named === "string") return named;
  } catch {
    // No package.json here: only --app can say.
  }
  throw new Error('name the app module with --app, or in package.json as "tabrelay": {"app": "./src/tools.js"}');
}

async function loadApp(path: string): Promise<AppDeclaration> {
  const mod: unknown = await import(pathToFileURL(resolve(path)).href);
  const app = isRecord(mod) ? (mod["app"] ?? mod["default"]) : undefined;
  if (!isRecord(app)) throw new Error(`${path} exports no app (export the defineApp value as "app" or as default)`);
  return app as unknown as AppDeclaration;
}

async function main(argv: readonly string[]): Promise<number> {
  const args = parseArgs(argv);
  if (args === "help") {
    console.log(`${USAGE}\n\nWrites the bundle the relay loads (RELAY_BUNDLE) from the defineApp value that --app exports\n(as "app" or default); --check exits 1 when the file is not what the declaration makes.`);
    return 0;
  }
  if (typeof args === "string") {
    console.error(`tabrelay-bundle: ${args}\n${USAGE}`);
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
  const onDisk = await readFile(args.out, "utf8").catch(() => undefined);
  if (onDisk === text) return 0;
  console.error(`tabrelay-bundle: ${args.out} is ${onDisk === undefined ? "missing" : "stale"}; run tabrelay-bundle --out ${args.out}`);
  return 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error("tabrelay-bundle: " + (err instanceof Error ? err.message : String(err)));
    process.exit(2);
  },
);
