// ../../sdk/dist/tabrelay.js
var se = 10 * 6e4;
var ie = 60 * 6e4;
var Ne = 128 * 1024;
var B = ["change", "heavy", "writes-file", "deletes-saved", "large-download", "publishes", "pauses-recording"];
var S = /^[a-zA-Z0-9_-]{1,64}$/;
var pe = /^[a-z][a-z0-9-]{0,39}$/;
function De(t) {
  let e = A(t);
  if (e) throw new TypeError("tabrelay: " + e);
  return t;
}
function A(t) {
  if (typeof t.version != "string" || !t.version.trim() || t.version.length > 200) return "version: required, at most 200 characters (every hello carries it)";
  if (!pe.test(t.app?.name ?? "")) return `app.name: ${JSON.stringify(t.app?.name)} must match ${pe}`;
  if (!t.app.title?.trim()) return "app.title: required";
  if (!Array.isArray(t.tools) || t.tools.length === 0) return "tools: at least one tool is required";
  let e = /* @__PURE__ */ new Set();
  for (let [n, r] of t.tools.entries()) {
    let o = Fe(r);
    if (o) return `tools[${n}].${o}`;
    if (e.has(r.name)) return `tools[${n}].name: ${JSON.stringify(r.name)} appears twice`;
    e.add(r.name);
  }
  return He(t.answersAt) ?? he("instructions", t.instructions, e) ?? he("answersAt", t.answersAt, e);
}
var fe = 200;
function He(t) {
  if (!(t === void 0 || t === "")) {
    if (typeof t != "string") return "answersAt: must be a string";
    if ([...t].length > fe) return `answersAt: at most ${fe} characters`;
    if (t.trim() !== t || /[<\n\r]/.test(t)) return "answersAt: one line of words, without '<' or spaces around it";
  }
}
function he(t, e, n) {
  for (let [, r] of (e ?? "").matchAll(/`([^`\n]+)`/g)) if (S.test(r) && !n.has(r)) return `${t}: names the tool \`${r}\`, which the app does not have`;
}
function Fe(t) {
  if (!S.test(t.name ?? "")) return `name: ${JSON.stringify(t.name)} must match ${S}`;
  if (!t.description?.trim()) return "description: required (hosts show it)";
  if (!["cells", "summaries", "none"].includes(t.result)) return `result: ${JSON.stringify(t.result)} must be "cells", "summaries" or "none"`;
  if (t.inputSchema?.type !== "object") return 'inputSchema: must be a JSON Schema with type "object"';
  let e = me(t.permissions);
  if (e) return e;
  if (!t.actions?.length) return;
  if (!t.inputSchema.properties || !("action" in t.inputSchema.properties)) return 'inputSchema: a tool with actions must declare an "action" property';
  let n = /* @__PURE__ */ new Set();
  for (let [r, o] of t.actions.entries()) {
    if (!S.test(o.name ?? "") || n.has(o.name)) return `actions[${r}].name: ${JSON.stringify(o.name)} must match ${S} and be unique`;
    n.add(o.name);
    let s = me(o.permissions);
    if (s) return `actions[${r}].${s}`;
  }
}
function me(t) {
  let e = t?.find((r) => !B.includes(r));
  if (e !== void 0) return `permissions: ${JSON.stringify(e)} is not one of ${B.join(", ")}`;
  let n = t?.find((r, o) => t.indexOf(r) !== o);
  return n === void 0 ? void 0 : `permissions: ${JSON.stringify(n)} appears twice`;
}
var Xe = 3 * 2e4;

// src/tools.ts
var app = De({
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
