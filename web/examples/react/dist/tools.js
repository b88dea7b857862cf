// ../../sdk/dist/tabrelay.js
var z = 10 * 6e4;
var Z = 60 * 6e4;
var Ae = 128 * 1024;
var N = ["change", "heavy", "writes-file", "deletes-saved", "large-download", "publishes", "pauses-recording"];
var w = /^[a-zA-Z0-9_-]{1,64}$/;
var se = /^[a-z][a-z0-9-]{0,39}$/;
function Ee(r) {
  let e = b(r);
  if (e) throw new TypeError("tabrelay: " + e);
  return r;
}
function b(r) {
  if (typeof r.version != "string" || !r.version.trim() || r.version.length > 200) return "version: required, at most 200 characters (every hello carries it)";
  if (!se.test(r.app?.name ?? "")) return `app.name: ${JSON.stringify(r.app?.name)} must match ${se}`;
  if (!r.app.title?.trim()) return "app.title: required";
  if (!Array.isArray(r.tools) || r.tools.length === 0) return "tools: at least one tool is required";
  let e = /* @__PURE__ */ new Set();
  for (let [t, n] of r.tools.entries()) {
    let o = Oe(n);
    if (o) return `tools[${t}].${o}`;
    if (e.has(n.name)) return `tools[${t}].name: ${JSON.stringify(n.name)} appears twice`;
    e.add(n.name);
  }
  return Ce(r.answersAt) ?? ae("instructions", r.instructions, e) ?? ae("answersAt", r.answersAt, e);
}
var ie = 200;
function Ce(r) {
  if (!(r === void 0 || r === "")) {
    if (typeof r != "string") return "answersAt: must be a string";
    if ([...r].length > ie) return `answersAt: at most ${ie} characters`;
    if (r.trim() !== r || /[<\n\r]/.test(r)) return "answersAt: one line of words, without '<' or spaces around it";
  }
}
function ae(r, e, t) {
  for (let [, n] of (e ?? "").matchAll(/`([^`\n]+)`/g)) if (w.test(n) && !t.has(n)) return `${r}: names the tool \`${n}\`, which the app does not have`;
}
function Oe(r) {
  if (!w.test(r.name ?? "")) return `name: ${JSON.stringify(r.name)} must match ${w}`;
  if (!r.description?.trim()) return "description: required (hosts show it)";
  if (!["cells", "summaries", "none"].includes(r.result)) return `result: ${JSON.stringify(r.result)} must be "cells", "summaries" or "none"`;
  if (r.inputSchema?.type !== "object") return 'inputSchema: must be a JSON Schema with type "object"';
  let e = ce(r.permissions);
  if (e) return e;
  if (!r.actions?.length) return;
  if (!r.inputSchema.properties || !("action" in r.inputSchema.properties)) return 'inputSchema: a tool with actions must declare an "action" property';
  let t = /* @__PURE__ */ new Set();
  for (let [n, o] of r.actions.entries()) {
    if (!w.test(o.name ?? "") || t.has(o.name)) return `actions[${n}].name: ${JSON.stringify(o.name)} must match ${w} and be unique`;
    t.add(o.name);
    let s = ce(o.permissions);
    if (s) return `actions[${n}].${s}`;
  }
}
function ce(r) {
  let e = r?.find((n) => !N.includes(n));
  if (e !== void 0) return `permissions: ${JSON.stringify(e)} is not one of ${N.join(", ")}`;
  let t = r?.find((n, o) => r.indexOf(n) !== o);
  return t === void 0 ? void 0 : `permissions: ${JSON.stringify(t)} appears twice`;
}
var $e = 3 * 2e4;

// src/tools.ts
var app = Ee({
  version: "todo-react-1",
  app: { name: "todo", title: "Todo" },
  instructions: "These tools act in the person's open Todo tab: `list_todos` reads the list, `add_todo` adds to it.",
  answersAt: "the list (`list_todos`)",
  tools: [
    {
      name: "list_todos",
      title: "List the todos",
      description: "Lists the todos, oldest first, with whether each is done.",
      inputSchema: { type: "object" },
      result: "cells",
      annotations: { readOnlyHint: true }
    },
    {
      name: "add_todo",
      title: "Add a todo",
      description: "Adds a todo at the end of the list; answers with the list's new length.",
      inputSchema: { type: "object", properties: { title: { type: "string", minLength: 1, maxLength: 200 } }, required: ["title"] },
      result: "summaries"
    }
  ]
});
export {
  app
};
