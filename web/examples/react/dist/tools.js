// ../../sdk/dist/tabrelay.js
var pe = 10 * 6e4;
var fe = 60 * 6e4;
var Fe = 128 * 1024;
var J = ["change", "heavy", "writes-file", "deletes-saved", "large-download", "publishes", "pauses-recording"];
var A = /^[a-zA-Z0-9_-]{1,64}$/;
var me = /^[a-z][a-z0-9-]{0,39}$/;
function qe(n) {
  let e = x(n);
  if (e) throw new TypeError("tabrelay: " + e);
  return n;
}
function x(n) {
  if (typeof n.version != "string" || !n.version.trim() || n.version.length > 200) return "version: required, at most 200 characters (every hello carries it)";
  if (!me.test(n.app?.name ?? "")) return `app.name: ${JSON.stringify(n.app?.name)} must match ${me}`;
  if (!n.app.title?.trim()) return "app.title: required";
  if (!Array.isArray(n.tools) || n.tools.length === 0) return "tools: at least one tool is required";
  let e = /* @__PURE__ */ new Set();
  for (let [t, r] of n.tools.entries()) {
    let o = Be(r);
    if (o) return `tools[${t}].${o}`;
    if (e.has(r.name)) return `tools[${t}].name: ${JSON.stringify(r.name)} appears twice`;
    e.add(r.name);
  }
  return je(n.answersAt) ?? ge("instructions", n.instructions, e) ?? ge("answersAt", n.answersAt, e);
}
var ye = 200;
function je(n) {
  if (!(n === void 0 || n === "")) {
    if (typeof n != "string") return "answersAt: must be a string";
    if ([...n].length > ye) return `answersAt: at most ${ye} characters`;
    if (n.trim() !== n || /[<\n\r]/.test(n)) return "answersAt: one line of words, without '<' or spaces around it";
  }
}
function ge(n, e, t) {
  for (let [, r] of (e ?? "").matchAll(/`([^`\n]+)`/g)) if (A.test(r) && !t.has(r)) return `${n}: names the tool \`${r}\`, which the app does not have`;
}
function Be(n) {
  if (!A.test(n.name ?? "")) return `name: ${JSON.stringify(n.name)} must match ${A}`;
  if (!n.description?.trim()) return "description: required (hosts show it)";
  if (!["cells", "summaries", "none"].includes(n.result)) return `result: ${JSON.stringify(n.result)} must be "cells", "summaries" or "none"`;
  if (n.inputSchema?.type !== "object") return 'inputSchema: must be a JSON Schema with type "object"';
  let e = he(n.permissions);
  if (e) return e;
  if (!n.actions?.length) return;
  if (!n.inputSchema.properties || !("action" in n.inputSchema.properties)) return 'inputSchema: a tool with actions must declare an "action" property';
  let t = /* @__PURE__ */ new Set();
  for (let [r, o] of n.actions.entries()) {
    if (!A.test(o.name ?? "") || t.has(o.name)) return `actions[${r}].name: ${JSON.stringify(o.name)} must match ${A} and be unique`;
    t.add(o.name);
    let s = he(o.permissions);
    if (s) return `actions[${r}].${s}`;
  }
}
function he(n) {
  let e = n?.find((r) => !J.includes(r));
  if (e !== void 0) return `permissions: ${JSON.stringify(e)} is not one of ${J.join(", ")}`;
  let t = n?.find((r, o) => n.indexOf(r) !== o);
  return t === void 0 ? void 0 : `permissions: ${JSON.stringify(t)} appears twice`;
}
var Qe = 3 * 2e4;

// src/tools.ts
var app = qe({
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
