// The tab's own check of a call's arguments (issue 24 item 10): a call
// whose arguments break its tool's inputSchema never reaches the handler,
// whichever way it came in, and the agent reads where and how.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { argumentsProblem, type Problem } from "../src/arguments.js";
import { Reply } from "../src/calls.js";
import { refusal } from "../src/notes.js";
import { checkToolCall } from "../src/toolcall.js";
import { defineApp } from "../src/tools.js";
import { callMsg } from "./app.js";
import { FakeBrowser, flush } from "./fakes.js";

const schema = {
  type: "object",
  properties: {
    title: { type: "string", minLength: 1, maxLength: 5 },
    n: { type: "integer", minimum: 1, exclusiveMaximum: 10 },
    tags: { type: "array", items: { enum: ["a", "b"] }, maxItems: 2 },
    kind: { const: "board" },
    size: { anyOf: [{ type: "number" }, { type: "string", enum: ["small", "large"] }] },
    one: { oneOf: [{ type: "integer" }, { type: "number", minimum: 0 }] },
    code: { type: "string", pattern: "^(a+)+$" },
    "a/b": { type: ["string", "null"] },
  },
  required: ["title"],
  additionalProperties: false,
} as const;

describe("argumentsProblem", () => {
  test("what the issue named: a number for a string, nothing where something is required, a property the schema does not allow", () => {
    assert.deepEqual(argumentsProblem(schema, { title: 123 }), ["/title", "type", "string"]);
    assert.deepEqual(argumentsProblem(schema, {}), ["/title", "required"]);
    assert.deepEqual(argumentsProblem(schema, { title: "a", extra: 1 }), ["/extra", "additionalProperties", "false"]);
    assert.equal(argumentsProblem(schema, { title: "a" }), undefined);
  });

  test("the rest of the subset tools use", () => {
    const bad: [unknown, ...Problem][] = [
      [{ title: "" }, "/title", "minLength", "1"],
      [{ title: "abcdef" }, "/title", "maxLength", "5"],
      [{ title: "a", n: 1.5 }, "/n", "type", "integer"],
      [{ title: "a", n: 0 }, "/n", "minimum", "1"],
      [{ title: "a", n: 10 }, "/n", "exclusiveMaximum", "10"],
      [{ title: "a", tags: ["a", "c"] }, "/tags/1", "enum"],
      [{ title: "a", tags: ["a", "b", "a"] }, "/tags", "maxItems", "2"],
      [{ title: "a", kind: "list" }, "/kind", "const"],
      [{ title: "a", size: "medium" }, "/size", "anyOf", "0 match"],
      [{ title: "a", one: 3 }, "/one", "oneOf", "2 match"],
      [{ title: "a", "a/b": 1 }, "/a~1b", "type", "string or null"],
    ];
    for (const [value, ...problem] of bad) assert.deepEqual(argumentsProblem(schema, value), problem, JSON.stringify(value));
    const good = [{ title: "abcde", n: 9, tags: ["b"], kind: "board", size: "large", one: 0.5, "a/b": null }, { title: "語語語語語" }, { title: "a", size: 3 }];
    for (const value of good) assert.equal(argumentsProblem(schema, value), undefined, JSON.stringify(value));
  });

  test("a pattern is left to the relay: a JavaScript regular expression can take exponential time on an agent's string", () => {
    // "^(a+)+$" would backtrack 2^40 times on this string; it is not run.
    assert.equal(argumentsProblem(schema, { title: "a", code: "a".repeat(40) + "!" }), undefined);
  });
});

const strict = defineApp({
  version: "strict-1",
  app: { name: "strict", title: "Strict" },
  instructions: "A tool with a closed schema.",
  tools: [{ name: "rename", description: "Renames the board.", inputSchema: schema, result: "none", permissions: ["change"] }],
});

describe("calls", () => {
  test("a call whose arguments break the schema never reaches its handler; the agent reads where, marked as a name", async () => {
    const browser = new FakeBrowser();
    const runs: unknown[] = [];
    const tab = browser.tab({ app: strict, handlers: { rename: (call) => (runs.push(call.arguments), new Reply({ data: "renamed" })) } });
    tab.client.start();
    tab.relay.last.welcome();
    tab.relay.last.receive(callMsg("c1", "rename", { title: 123 }));
    tab.relay.last.receive(callMsg("c2", "rename", {}));
    tab.relay.last.receive(callMsg("c3", "rename", { title: "a", extra: 1 }));
    tab.relay.last.receive(callMsg("c4", "rename", { title: "a" }));
    await flush();
    const results = Object.fromEntries(tab.relay.last.sent("result").map((m) => [m["id"], m["result"]]));
    const sentence = (how: string) => `The arguments of “rename” break its inputSchema's ${how} at {0}; nothing was done.`;
    assert.deepEqual(results, {
      c1: refusal(sentence("type (string)"), "/title"),
      c2: refusal(sentence("required"), "/title"),
      c3: refusal(sentence("additionalProperties (false)"), "/extra"),
      c4: { data: "renamed" },
    });
    assert.deepEqual(runs, [{ title: "a" }]);
  });
});

describe("the one tool call", () => {
  test("every way in (the relay's calls, the chat in the tab) is checked by checkToolCall", () => {
    const target = { app: strict, handlers: { rename: () => "renamed" } };
    assert.deepEqual(checkToolCall(target, "rename", { title: "abcdef" }),
      refusal("The arguments of “rename” break its inputSchema's maxLength (5) at {0}; nothing was done.", "/title"));
    assert.ok("handler" in checkToolCall(target, "rename", { title: "abc" }));
  });
});
