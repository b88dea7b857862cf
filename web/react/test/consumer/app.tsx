// Type-checked by scripts/consumer.mjs in a fresh project that installed
// the packed @tabrelay/react and @tabrelay/tab: useToolHandler keeps the
// SDK's typed arguments and JSON results, refuses undeclared tools, and
// the six elements take their properties in JSX. Each @ts-expect-error
// fails the check when its line compiles.

import { defineApp } from "@tabrelay/tab";
import { createPermissions } from "@tabrelay/tab/ui";
import { createTabrelay } from "@tabrelay/react";

const app = defineApp({
  version: "t-1", app: { name: "t", title: "T" }, instructions: "Test tools.",
  tools: [
    { name: "find", description: "Finds.", result: "cells",
      inputSchema: { type: "object", properties: { query: { type: "string" }, limit: { type: "integer" } }, required: ["limit"] } },
    { name: "edit", description: "Edits.", result: "none", inputSchema: { type: "object", properties: { action: { enum: ["add", "remove"] } } },
      actions: [{ name: "add" }, { name: "remove" }] },
  ],
});
const { useTabrelay, useToolHandler, client } = createTabrelay({ relay: "https://relay.example.com", app });
const permissions = createPermissions({ app });

export function Ok() {
  const { status, connect } = useTabrelay();
  useToolHandler("find", (call) => {
    const limit: number = call.arguments.limit;
    const query: string | undefined = call.arguments.query;
    return [query ?? "", limit];
  });
  useToolHandler("find", async (call) => ({ n: call.arguments.limit }));
  useToolHandler("edit", { add: (call) => call.arguments.action satisfies "add", remove: () => null });
  return (
    <div onClick={connect}>
      {status.state}
      <tabrelay-connect client={client} app={app} />
      <tabrelay-connections client={client} app={app} />
      <tabrelay-confirm permissions={permissions} />
      <tabrelay-activity turns={permissions.turns} />
      <tabrelay-data-switch permissions={permissions} />
      <tabrelay-notice permissions={permissions} />
      <tabrelay-permissions permissions={permissions} id="p" />
    </div>
  );
}

export function Wrong() {
  // @ts-expect-error: no such tool
  useToolHandler("delete", () => null);
  // @ts-expect-error: limit is a number
  useToolHandler("find", (call) => call.arguments.limit.toUpperCase());
  // @ts-expect-error: a bigint is not JSON
  useToolHandler("find", () => 10n);
  // @ts-expect-error: a promise of a function is not JSON either
  useToolHandler("find", async () => () => 1);
  return (
    <>
      {/* @ts-expect-error: the connect panel's client is a client, not a string */}
      <tabrelay-connect client="x" />
      {/* @ts-expect-error: the activity line takes turns, not permissions */}
      <tabrelay-activity permissions={permissions} />
    </>
  );
}
