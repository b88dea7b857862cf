// Types only (no code): JSON values, the arguments a tool's inputSchema
// admits as a TypeScript type, and the check that a handler's result is
// JSON (issue 26). defineApp takes the declaration as a const type
// parameter, so a schema written in it is already as literal as `as const`.

/** A JSON value: what arguments are made of, and what a handler returns as a result's data. */
export type JsonValue = string | number | boolean | null | readonly JsonValue[] | JsonObject;
/** A JSON object. A property may read as undefined: it is absent. */
export type JsonObject = { readonly [key: string]: JsonValue | undefined };

/**
 * FromSchema is the type of the values a JSON Schema admits, for the
 * keywords that say what a value is: `const`, `enum`, `anyOf`, `oneOf`,
 * `type` (one or a list: string, number, integer, boolean, null, array
 * with `items`, object with `properties` and `required`). A schema it
 * does not read (`{}`, `$ref`, a `not`) admits any JSON value; an object
 * without `properties`, any JSON object. Properties beyond `properties`
 * are left out of the type. Both the relay and the SDK check an agent's
 * arguments against the schema before the handler runs (the SDK the
 * keywords tools use: arguments.ts), so the type holds for those keywords.
 */
export type FromSchema<S> =
  S extends { readonly const: infer C } ? C
  : S extends { readonly enum: readonly (infer E)[] } ? E
  : S extends { readonly anyOf: readonly (infer U)[] } ? FromSchema<U>
  : S extends { readonly oneOf: readonly (infer U)[] } ? FromSchema<U>
  : S extends { readonly type: infer T } ? FromType<T, S>
  : JsonValue;

type FromType<T, S> =
  T extends readonly (infer U)[] ? FromType<U, S>
  : T extends "string" ? string
  : T extends "number" | "integer" ? number
  : T extends "boolean" ? boolean
  : T extends "null" ? null
  : T extends "array" ? (S extends { readonly items: infer I } ? readonly FromSchema<I>[] : readonly JsonValue[])
  : T extends "object" ? FromObject<S>
  : JsonValue;

type RequiredOf<S> = S extends { readonly required: readonly (infer R)[] } ? R : never;

type FromObject<S> = S extends { readonly properties: infer P }
  ? Flat<
    & { readonly [K in keyof P & RequiredOf<S>]: FromSchema<P[K]> }
    & { readonly [K in Exclude<keyof P, RequiredOf<S>>]?: FromSchema<P[K]> }
  >
  : JsonObject;

type Flat<T> = { [K in keyof T]: T[K] } & {};

/**
 * JsonChecked is T where T is JSON data — objects property by property,
 * so an interface's values pass — and never in each place that is not
 * (a bigint, a function, a symbol, a Map's methods): a handler whose
 * result holds one does not type-check.
 */
export type JsonChecked<T> =
  unknown extends T ? T
  : T extends JsonValue | undefined | void ? T
  : T extends bigint | symbol | ((...args: never[]) => unknown) ? never
  : T extends object ? { [K in keyof T]: JsonChecked<T[K]> }
  : never;
