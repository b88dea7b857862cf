// Type-checked, never run (issue 26): each handler's call.arguments is
// its tool's inputSchema as a TypeScript type, results must be JSON, and
// the handlers' names are the declared tools' (and actions'). A line
// under each ts-expect-error directive is a use that must not compile: an
// unused directive fails the check. scripts/consumer.mjs checks it against the packed
// types with TypeScript 5.0, 5.9 and ours; `npm run check` here.

import { connect, defineApp, Reply, TabClient, type FromSchema, type ToolArguments, type ToolCall } from "@tabrelay/tab";
import { createPermissions } from "@tabrelay/tab/ui";

const period = { type: "object", properties: { from: { type: "string" }, to: { type: "string" } }, required: ["from"] } as const;

const app = defineApp({
  version: "shop-1",
  app: { name: "shop", title: "Shop" },
  instructions: "These tools act in the person's open Shop tab.",
  tools: [
    {
      name: "find", description: "Finds products.", result: "cells",
      inputSchema: {
        type: "object",
        properties: {
          query: { type: "string" }, limit: { type: "integer" }, tags: { type: "array", items: { type: "string" } },
          sort: { enum: ["price", "name"] }, note: { type: ["string", "null"] }, period,
          near: { anyOf: [{ type: "string" }, { type: "object", properties: { lat: { type: "number" }, lon: { type: "number" } }, required: ["lat", "lon"] }] },
          anything: {},
        },
        required: ["limit"],
      },
    },
    {
      name: "cart", description: "Adds to or empties the cart.", result: "none",
      inputSchema: { type: "object", properties: { action: { enum: ["add", "empty"] }, sku: { type: "string" }, count: { type: "number" } }, required: ["action"] },
      actions: [{ name: "add" }, { name: "empty" }],
    },
    { name: "free", description: "Takes any arguments.", result: "summaries", inputSchema: { type: "object" } },
  ],
});

interface Product {
  sku: string;
  price: number;
  tags: string[];
  note?: string;
}
declare const products: Product[];

connect({
  relay: "https://relay.example.com",
  app,
  handlers: {
    find: (call) => {
      const limit: number = call.arguments.limit;
      const query: string | undefined = call.arguments.query;
      const tags: readonly string[] | undefined = call.arguments.tags;
      const sort: "price" | "name" | undefined = call.arguments.sort;
      const note: string | null | undefined = call.arguments.note;
      const from: string | undefined = call.arguments.period?.from;
      const near = call.arguments.near;
      const lat: number | undefined = typeof near === "object" ? near.lat : undefined;
      void [query, tags, sort, note, from, lat, call.arguments.anything];
      return products.slice(0, limit); // an interface's values are JSON too
    },
    cart: {
      add: (call) => {
        const action: "add" = call.arguments.action;
        return { action, sku: call.arguments.sku ?? null };
      },
      empty: async (call) => new Reply({ data: { emptied: call.arguments.action === "empty" } }),
    },
    free: (call) => call.arguments["anything"] ?? null,
  },
});

// A schema declared apart, as const, gives the same type.
export const range: FromSchema<typeof period> = { from: "2026-01-01" };
// @ts-expect-error: from is required
export const noFrom: FromSchema<typeof period> = { to: "2026-01-02" };

const fine = { find: () => [], cart: () => undefined, free: () => null };

connect({
  relay: "https://relay.example.com", app,
  handlers: {
    // @ts-expect-error: limit is a number
    find: (call) => call.arguments.limit.toUpperCase(),
    cart: () => undefined,
    // @ts-expect-error: free takes no declared properties, so each reads as a JSON value or undefined
    free: (call) => call.arguments["x"].length,
  },
});
connect({
  relay: "https://relay.example.com", app,
  handlers: {
    // @ts-expect-error: a property the schema does not declare
    find: (call) => call.arguments.nope,
    cart: () => undefined,
    free: () => null,
  },
});

// Results are JSON.
// @ts-expect-error: a bigint is no JSON
connect({ relay: "https://relay.example.com", app, handlers: { ...fine, find: () => 10n } });
// @ts-expect-error: nor inside an object
connect({ relay: "https://relay.example.com", app, handlers: { ...fine, find: () => ({ total: 10n }) } });
// @ts-expect-error: nor from a promise
connect({ relay: "https://relay.example.com", app, handlers: { ...fine, find: async () => [1n] } });
// @ts-expect-error: nor in a Reply's data
connect({ relay: "https://relay.example.com", app, handlers: { ...fine, find: () => new Reply({ data: { at: 1n } }) } });
// @ts-expect-error: a function is no JSON
connect({ relay: "https://relay.example.com", app, handlers: { ...fine, free: () => ({ later: () => 1 }) } });
// @ts-expect-error: a Map is no JSON (it would be {})
connect({ relay: "https://relay.example.com", app, handlers: { ...fine, free: () => new Map([["a", 1]]) } });
// @ts-expect-error: new TabClient holds the results to JSON too
new TabClient({ relay: "https://relay.example.com", app, handlers: { ...fine, find: () => 10n } });

// The handlers' names are the declared ones.
// @ts-expect-error: every declared tool needs its handler
connect({ relay: "https://relay.example.com", app, handlers: { find: () => [], cart: () => undefined } });
// @ts-expect-error: no handler for a tool the app does not declare
connect({ relay: "https://relay.example.com", app, handlers: { ...fine, other: () => 1 } });
// @ts-expect-error: the actions' handlers are the declared actions'
connect({ relay: "https://relay.example.com", app, handlers: { ...fine, cart: { add: () => null } } });

// A handler written apart takes the arguments' type by ToolCall.
export const find = (call: ToolCall<ToolArguments<typeof app, "find">>) => call.arguments.limit;

// The person's permissions estimate a call's work from the same arguments.
createPermissions({ app, estimates: { find: ({ arguments: a }) => a.limit * 10 } });
// @ts-expect-error: limit is a number there too
createPermissions({ app, estimates: { find: ({ arguments: a }) => a.limit.length } });
