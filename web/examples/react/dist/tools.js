// ../../sdk/dist/tabrelay.js
var ne = 10 * 6e4;
var re = 60 * 6e4;
var Ne = 128 * 1024;
var Y = ["change", "heavy", "writes-file", "deletes-saved", "large-download", "publishes", "pauses-recording"];
var S = /^[a-zA-Z0-9_-]{1,64}$/;
var Te = /^[a-z][a-z0-9-]{0,39}$/;
function Xe(n) {
  let e = A(n);
  if (e) throw new TypeError("tabrelay: " + e);
  return n;
}
function A(n) {
  if (typeof n.version != "string" || !n.version.trim() || n.version.length > 200) return "version: required, at most 200 characters (every hello carries it)";
  if (!Te.test(n.app?.name ?? "")) return `app.name: ${JSON.stringify(n.app?.name)} must match ${Te}`;
  if (!n.app.title?.trim()) return "app.title: required";
  if (!Array.isArray(n.tools) || n.tools.length === 0) return "tools: at least one tool is required";
  let e = /* @__PURE__ */ new Set();
  for (let [t, r] of n.tools.entries()) {
    let o = Ve(r);
    if (o) return `tools[${t}].${o}`;
    if (e.has(r.name)) return `tools[${t}].name: ${JSON.stringify(r.name)} appears twice`;
    e.add(r.name);
  }
  return Qe(n.answersAt) ?? Se("instructions", n.instructions, e) ?? Se("answersAt", n.answersAt, e);
}
var xe = 200;
function Qe(n) {
  if (!(n === void 0 || n === "")) {
    if (typeof n != "string") return "answersAt: must be a string";
    if ([...n].length > xe) return `answersAt: at most ${xe} characters`;
    if (n.trim() !== n || /[<\n\r]/.test(n)) return "answersAt: one line of words, without '<' or spaces around it";
  }
}
function Se(n, e, t) {
  for (let [, r] of (e ?? "").matchAll(/`([^`\n]+)`/g)) if (S.test(r) && !t.has(r)) return `${n}: names the tool \`${r}\`, which the app does not have`;
}
function Ve(n) {
  if (!S.test(n.name ?? "")) return `name: ${JSON.stringify(n.name)} must match ${S}`;
  if (!n.description?.trim()) return "description: required (hosts show it)";
  if (n.result !== void 0 && !["cells", "summaries", "none"].includes(n.result)) return `result: ${JSON.stringify(n.result)} must be "cells", "summaries" or "none"`;
  if (n.inputSchema?.type !== "object") return 'inputSchema: must be a JSON Schema with type "object"';
  let e = Ye(n);
  if (e) return e;
  let t = Ae(n.permissions, n.confirmAt);
  if (t) return t;
  if (!n.actions?.length) return;
  if (!n.inputSchema.properties || !("action" in n.inputSchema.properties)) return 'inputSchema: a tool with actions must declare an "action" property';
  let r = /* @__PURE__ */ new Set();
  for (let [o, s] of n.actions.entries()) {
    if (!S.test(s.name ?? "") || r.has(s.name)) return `actions[${o}].name: ${JSON.stringify(s.name)} must match ${S} and be unique`;
    r.add(s.name);
    let a = Ae(s.permissions, s.confirmAt);
    if (a) return `actions[${o}].${a}`;
  }
}
function Ye(n) {
  let e = n.dataScope;
  if (e !== void 0) for (let t of ["singleCell", "pictures", "groups"]) {
    let r = e[t];
    if (r === void 0) continue;
    if (!Array.isArray(r) || r.some((s) => typeof s != "string" || !/^[^.]+(\.[^.]+)*$/.test(s))) return `dataScope.${t}: a list of fields ("a.b", "*" for every item)`;
    let o = t === "groups" && r.find((s) => !(s in (n.inputSchema.properties ?? {})));
    if (o) return `dataScope.groups: ${JSON.stringify(o)} is not an argument of inputSchema`;
  }
}
function Ae(n, e) {
  if (![void 0, "start", "handler"].includes(e)) return 'confirmAt: must be "start" or "handler"';
  let t = n?.find((o) => !Y.includes(o));
  if (t !== void 0) return `permissions: ${JSON.stringify(t)} is not one of ${Y.join(", ")}`;
  let r = n?.find((o, s) => n.indexOf(o) !== s);
  return r === void 0 ? void 0 : `permissions: ${JSON.stringify(r)} appears twice`;
}
var it = 3 * 2e4;

// src/tools.ts
var app = Xe({
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
      result: "summaries",
      permissions: ["change"]
    }
  ]
});
export {
  app
};
