// The tab's own check of a call's arguments against its tool's
// inputSchema (issue 24 item 10), before the handler runs, whichever way
// the call came in: the relay checks them too (with a full JSON Schema
// library), but a handler must not rely on a relay it does not control.
// The subset tools use: type, enum, const, properties, required,
// additionalProperties, items, allOf, anyOf, oneOf, and the bounds
// (minimum, maximum, exclusiveMinimum, exclusiveMaximum, minLength,
// maxLength, minItems, maxItems, minProperties, maxProperties). Other
// keywords are left to the relay: pattern among them, since a JavaScript
// regular expression can take exponential time on an agent's string (the
// relay's are linear), and $ref, which this check does not follow.

import { isRecord, record } from "./protocol.js";

/** Where the arguments break the schema (a JSON pointer), the keyword they break, and a detail (the keyword's value). */
export type Problem = [at: string, keyword: string, detail?: string];

const BOUNDS: readonly [string, (v: number, b: number) => boolean][] = [
  ["minimum", (v, b) => v >= b], ["maximum", (v, b) => v <= b],
  ["exclusiveMinimum", (v, b) => v > b], ["exclusiveMaximum", (v, b) => v < b],
];

/** argumentsProblem returns where and how value breaks schema; undefined when it holds (as far as this subset sees). */
export function argumentsProblem(schema: unknown, value: unknown, at = ""): Problem | undefined {
  if (schema === false) return [at, "schema", "false"];
  if (!isRecord(schema)) return undefined;
  const types = schema["type"] === undefined ? undefined : ([] as unknown[]).concat(schema["type"]);
  if (types && !types.some((t) => isType(t, value))) return [at, "type", types.join(" or ")];
  if (Array.isArray(schema["enum"]) && !schema["enum"].some((e) => same(e, value))) return [at, "enum"];
  if ("const" in schema && !same(schema["const"], value)) return [at, "const"];
  const size: [string, number] | undefined = typeof value === "string" ? ["Length", [...value].length]
    : Array.isArray(value) ? ["Items", value.length]
    : isRecord(value) ? ["Properties", Object.keys(value).length] : undefined;
  const bounds: [string, boolean][] = typeof value === "number" ? BOUNDS.map(([k, ok]) => [k, ok(value, schema[k] as number)])
    : size ? [[`min${size[0]}`, size[1] >= (schema[`min${size[0]}`] as number)], [`max${size[0]}`, size[1] <= (schema[`max${size[0]}`] as number)]] : [];
  for (const [k, ok] of bounds) if (typeof schema[k] === "number" && !ok) return [at, k, String(schema[k])];
  if (Array.isArray(value) && isRecord(schema["items"])) {
    for (let i = 0; i < value.length; i++) {
      const p = argumentsProblem(schema["items"], value[i], `${at}/${i}`);
      if (p) return p;
    }
  }
  if (isRecord(value)) {
    const props = record(schema["properties"]);
    for (const name of Array.isArray(schema["required"]) ? schema["required"] : []) {
      if (typeof name === "string" && !(name in value)) return [`${at}/${pointer(name)}`, "required"];
    }
    for (const [name, v] of Object.entries(value)) {
      const sub = name in props ? props[name] : schema["additionalProperties"];
      const p = argumentsProblem(sub, v, `${at}/${pointer(name)}`);
      if (p) return sub === false ? [p[0], "additionalProperties", "false"] : p;
    }
  }
  const list = (k: string) => (Array.isArray(schema[k]) ? (schema[k] as unknown[]) : undefined);
  for (const sub of list("allOf") ?? []) {
    const p = argumentsProblem(sub, value, at);
    if (p) return p;
  }
  for (const k of ["anyOf", "oneOf"]) {
    const fits = list(k)?.filter((sub) => !argumentsProblem(sub, value, at)).length;
    if (fits === 0 || (k === "oneOf" && fits !== undefined && fits > 1)) return [at, k, `${fits} match`];
  }
  return undefined;
}

function isType(type: unknown, v: unknown): boolean {
  switch (type) {
    case "integer": return Number.isInteger(v);
    case "number": return typeof v === "number" && Number.isFinite(v);
    case "object": return isRecord(v);
    case "array": return Array.isArray(v);
    case "null": return v === null;
    default: return typeof v === type;
  }
}

function same(a: unknown, b: unknown): boolean {
  return a === b || (typeof a === "object" && JSON.stringify(a) === JSON.stringify(b));
}

function pointer(name: string): string {
  return name.replace(/~/g, "~0").replace(/\//g, "~1");
}
