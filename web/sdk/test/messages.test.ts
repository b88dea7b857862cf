// The person's language (issue 26): every sentence the elements show comes
// from the messages table. The elements are driven through their states on
// the DOM stand-in (test/dom.ts) with a sentinel table whose every entry
// says ⟦its key⟧; each text node and each aria-label, title and
// placeholder must then be sentinels, punctuation and the app's or the
// relay's own data, nothing else: a sentence written into an element
// instead of the table shows as letters left over. The German table has
// every entry of the English one, and says each in German.

import assert from "node:assert/strict";
import { test } from "node:test";
import type { ToolCall } from "../src/calls.js";
import { connectInfoOf, RelayError, type ConnectInfo, type ConnectionInfo, type ScopeEntry } from "../src/requests.js";
import { defineApp, PERMISSION_KINDS, type ToolDeclaration } from "../src/tools.js";
import type { Status } from "../src/client.js";
import { STOP_MESSAGES, type StopReason } from "../src/codes.js";
import { said } from "./app.js";
import { doc, FakeNode } from "./dom.js";

// The page loads with an approval link's fragment; the relay's window opens.
let hash = "#tabrelay-connect=KQ7M-2XDP";
Object.assign(globalThis, {
  location: { get href() { return "https://app.example/" + hash; }, get hash() { return hash; } },
  history: { state: null, replaceState: () => void (hash = "") },
  CSS: { escape: (s: string) => s },
});
Object.assign((globalThis as unknown as { window: object }).window, {
  open: () => ({ closed: false, location: { href: "" }, close() {} }),
});

const ui = await import("../src/ui/index.js");
const { de } = await import("../src/locales/de.js");
const { CONFIRM_POLL_MS } = await import("../src/ui/connect.js");
type Messages = import("../src/ui/messages.js").Messages;

/** sentinel is a table of en's shape whose every sentence is ⟦its key⟧, and whose language is qaa (private use). */
function sentinel(table: unknown, path = ""): unknown {
  if (path === "lang") return "qaa";
  if (typeof table === "string") return `⟦${path}⟧`;
  if (typeof table === "function") return () => `⟦${path}⟧`;
  return Object.fromEntries(Object.entries(table as object).map(([k, v]) => [k, sentinel(v, path ? `${path}.${k}` : k)]));
}

/** shape lists the table's entries: key path and kind. */
function shape(table: unknown, path = ""): string[] {
  if (typeof table !== "object" || table === null) return [`${path}: ${typeof table}`];
  return Object.entries(table).flatMap(([k, v]) => shape(v, path ? `${path}.${k}` : k)).sort();
}

const app = defineApp({
  version: "words-1", app: { name: "words", title: "Ledger" }, instructions: "Ledger tools.",
  tools: [
    { name: "list", description: "Lists entries.", inputSchema: { type: "object" }, result: "summaries" },
    { name: "cells", description: "Reads cell values.", inputSchema: { type: "object" }, result: "cells" },
    { name: "edit", title: "Edit entry", description: "Edits an entry.", inputSchema: { type: "object" }, result: "none", permissions: ["change"] },
    {
      name: "file", title: "File", description: "Saved files.", result: "none", permissions: ["change"],
      inputSchema: { type: "object", properties: { action: { type: "string" } } },
      actions: [{ name: "rename", description: "Renames a file." }, { name: "delete", permissions: ["change", "deletes-saved"] }],
    },
    { name: "render", title: "Render", description: "Renders all.", inputSchema: { type: "object" }, result: "none", permissions: ["heavy"] },
  ],
});

/** What the app and the relay say themselves: shown as they are, in no table. */
const DATA = [
  ...(app.tools as readonly ToolDeclaration[]).flatMap((t) => [t.name, t.title ?? "", t.description, ...(t.actions ?? []).flatMap((a) => [a.name, a.description ?? ""])]),
  app.app.title, "Claude", "claude.ai", "Other", "other.example", "Chrome on Linux", "xn--clude-5ve.ai", "KQ7M-2XDP", "XXXX-XXXX",
].filter(Boolean).sort((a, b) => b.length - a.length);

const roots: FakeNode[] = [];
const offending: string[] = [];
/** look records what root shows now; alsoData: values of this moment that are data too (a call's arguments). */
function look(root: FakeNode, where: string, alsoData: string[] = []): void {
  if (!roots.includes(root)) roots.push(root);
  const visit = (n: FakeNode) => {
    const texts = n.tag === "#text" ? [n.text] : ["aria-label", "title", "placeholder", "alt"].map((a) => n.getAttribute(a) ?? "");
    for (const text of texts) {
      let rest = text.replace(/⟦[^⟧]*⟧/g, "");
      for (const d of [...alsoData, ...DATA]) rest = rest.split(d).join("");
      if (/\p{L}/u.test(rest)) offending.push(`${where}: "${text}"`);
    }
    n.children.forEach(visit);
  };
  visit(root);
}

const tick = () => new Promise((resolve) => setImmediate(resolve));
async function until(what: string, ok: () => boolean): Promise<void> {
  for (let i = 0; i < 600 && !ok(); i++) await new Promise((resolve) => setTimeout(resolve, 100));
  assert.ok(ok(), `timed out waiting for ${what}`);
}
const part = (el: FakeNode, name: string) => el.querySelector(`[data-part=${name}]`)!;
const submit = (form: FakeNode) => form.dispatch("submit", { preventDefault() {} });
const tickBox = (el: FakeNode, sel: string) => {
  const box = el.querySelector(sel) as unknown as FakeNode & { checked: boolean };
  box.checked = true;
  box.dispatch("change");
};
function mount<T>(Element: new () => T, props: Partial<T> = {}): FakeNode & T {
  const el = Object.assign(new Element() as FakeNode & T, props);
  doc.body.append(el);
  (el as unknown as { connectedCallback(): void }).connectedCallback();
  return el;
}

const info = (more: Record<string, unknown> = {}): ConnectInfo => connectInfoOf({
  client: "Claude", clientKind: "registered", redirectHost: "claude.ai", requestedScope: [{ tool: "list" }, { tool: "file", actions: ["rename"] }],
  expiresAt: Date.now() + 600_000, startedAt: Date.now(), device: "Chrome on Linux", sameAddress: true, crossDevice: true, state: "pending", ...more,
});

async function connectPanel(): Promise<void> {
  const answers: (ConnectInfo | Error)[] = [];
  const conn = { id: "conn_111111", client: "Claude", host: "claude.ai", createdAt: 1, lastUsedAt: 1, scope: [] };
  const client = {
    app,
    connectInfo: async () => {
      const a = answers.shift() ?? info();
      if (a instanceof Error) throw a;
      return a;
    },
    approve: async (_: string, scope: readonly ScopeEntry[]) => ({ ...conn, scope: [...scope] }),
    approveLink: async () => "https://relay.example/authorize/status/req_1/confirm#handle",
    decline: async () => {},
    forget: async () => {},
  };
  // A link's code: brought, looked up, approved through the relay's window, declined there.
  const link = mount(ui.TabrelayConnect, { client });
  look(link, "connect: a link's code");
  submit(part(link, "code-form"));
  await tick();
  look(link, "connect: who asks, by link");
  answers.push(info({ state: "declined", reason: "other-browser" }));
  submit(part(link, "decide-form"));
  await tick();
  look(link, "connect: the relay's window");
  await until("the link's outcome", () => part(link, "error").textContent !== "");
  look(link, "connect: another browser");

  // A typed code: the second question, approved, undone.
  const typed = mount(ui.TabrelayConnect, { client });
  answers.push(info({ clientKind: "metadata-document", clientUrl: "https://claude.ai/m", redirectHost: "xn--clude-5ve.ai", redirectHostMixedScript: true }));
  typed.show("ABCD-EFGH");
  await tick();
  look(typed, "connect: who asks, typed");
  (typed.querySelectorAll("input[data-tool]") as unknown as { checked: boolean }[]).forEach((b) => (b.checked = false));
  for (const b of typed.querySelectorAll("input[data-tool]")) b.dispatch("change");
  submit(part(typed, "decide-form"));
  look(typed, "connect: nothing chosen");
  tickBox(typed, "input[data-tool=list]");
  submit(part(typed, "decide-form"));
  look(typed, "connect: the second question");
  part(typed, "approve-typed").dispatch("click");
  await tick();
  look(typed, "connect: connected");
  part(typed, "undo").dispatch("click");
  await tick();
  look(typed, "connect: undone");

  // No code, a wrong one, a failure of another kind, an expired code, declined.
  const other = mount(ui.TabrelayConnect, { client });
  (part(other, "code") as unknown as { value: string }).value = "";
  submit(part(other, "code-form"));
  look(other, "connect: no code");
  answers.push(new RelayError("wrong-code", "the relay's words"));
  other.show("ZZZZ-ZZZZ");
  await tick();
  look(other, "connect: a wrong code");
  answers.push(new Error("an exception's own words"));
  other.show("ZZZZ-ZZZZ");
  await tick();
  look(other, "connect: another failure");
  answers.push(info({ expiresAt: Date.now() - 1, redirectHost: "", client: "" }));
  other.show("ZZZZ-ZZZZ");
  await tick();
  look(other, "connect: expired, unnamed");
  part(other, "decline").dispatch("click");
  await tick();
  look(other, "connect: declined");
}

async function connectionsPanel(): Promise<void> {
  const T0 = 1_767_225_600_000;
  const c = (id: string, client: string, host: string, scope: ScopeEntry[], more: Partial<ConnectionInfo> = {}): ConnectionInfo =>
    ({ id, client, host, createdAt: T0, lastUsedAt: T0 + 5000, scope, ...more });
  let list: ConnectionInfo[] = [
    c("conn_111111", "Claude", "claude.ai", [{ tool: "list" }, { tool: "file", actions: ["*"] }]),
    c("conn_222222", "Claude", "claude.ai", [{ tool: "file", actions: ["rename"] }, { tool: "gone" }], { parentId: "conn_111111" }),
    c("conn_333333", "Claude", "claude.ai", []),
    c("conn_444444", "", "", [{ tool: "list" }], { createdAt: 0, lastUsedAt: 0 }),
  ];
  const listeners: ((l: readonly ConnectionInfo[]) => void)[] = [];
  const status: ((s: Status) => void)[] = [];
  let release = () => {};
  const failures: Error[] = [];
  const client = {
    onConnections: (l: (l: readonly ConnectionInfo[]) => void) => (listeners.push(l), () => {}),
    onStatus: (l: (s: Status) => void) => (status.push(l), () => {}),
    listConnections: () => new Promise<readonly ConnectionInfo[]>((resolve, reject) => {
      const failure = failures.shift();
      release = () => (failure ? reject(failure) : resolve(list));
    }),
    forget: async (id: string) => {
      const failure = failures.shift();
      if (failure) throw failure;
      list = list.filter((x) => x.id !== id);
    },
    setScope: async (id: string, scope: readonly ScopeEntry[]) => {
      const failure = failures.shift();
      if (failure) throw failure;
      return { ...list.find((x) => x.id === id)!, scope: [...scope] };
    },
  };
  const el = mount(ui.TabrelayConnections, { app, client });
  look(el, "connections: loading");
  release();
  await tick();
  look(el, "connections: the list");
  const press = async (sel: string) => (el.querySelector(sel)!.dispatch("click"), await tick());
  await press("[data-key=conn_111111:edit]");
  look(el, "connections: choosing");
  submit(el.querySelector("[data-part=scope-form]")!);
  await tick();
  look(el, "connections: saved");
  await press("[data-key=conn_333333:edit]");
  failures.push(new RelayError("invalid-scope", "the relay's words"));
  submit(el.querySelector("[data-part=scope-form]")!);
  await tick();
  look(el, "connections: refused scope");
  await press("[data-key=conn_444444:forget]");
  look(el, "connections: forget?");
  failures.push(new RelayError("unavailable", "the relay's words"));
  await press("[data-key=conn_444444:confirm-forget]");
  look(el, "connections: forget failed");
  await press("[data-key=conn_444444:confirm-forget]");
  look(el, "connections: forgotten");
  await press("[data-key=conn_222222:edit]");
  for (const l of listeners) l(list.filter((x) => x.id !== "conn_222222"));
  look(el, "connections: gone while edited");
  for (const s of status) s({ state: "connecting" });
  look(el, "connections: stale");
  failures.push(new RelayError("lost", "the client's words"));
  await press("[data-part=refresh]");
  release();
  await tick();
  look(el, "connections: the list failed");
  for (const l of listeners) l([]);
  look(el, "connections: none");
}

async function permissionsElements(): Promise<void> {
  const p = ui.createPermissions({ app, estimates: { render: () => 12_000 }, environment: { storage: null, onStorage: () => () => {}, onPageHide: () => () => {} } });
  const settingsNone = mount(ui.TabrelayPermissions);
  look(settingsNone, "permissions: none");
  const settings = mount(ui.TabrelayPermissions, { permissions: p });
  const dataSwitch = mount(ui.TabrelayDataSwitch, { permissions: p });
  const card = mount(ui.TabrelayConfirm, { permissions: p });
  const activity = mount(ui.TabrelayActivity, { turns: p.turns });
  look(settings, "permissions");
  look(dataSwitch, "data switch");
  p.setDocument({ id: "ledger-1", name: "March" });
  const notice = mount(ui.TabrelayNotice, { permissions: p });
  look(notice, "notice: not due");
  look(dataSwitch, "data switch: for a document", ["March"]);
  const tool = (name: string) => app.tools.find((t) => t.name === name)! as ToolDeclaration;
  const call = (id: string, name: string, action: string | undefined, args: Record<string, unknown>, turn = "turn-1"): ToolCall => ({
    id, tool: name, action, arguments: args as ToolCall["arguments"], turn, deadline: Date.now() + 60_000, redelivery: 0,
    connection: { id: "conn_111111", kind: "connector", client: "Claude", host: "claude.ai" },
    signal: new AbortController().signal, progress() {}, log() {}, asking() {}, answered() {}, step() {}, confirm: async () => {},
  });
  let finish = () => {};
  const next = () => new Promise<{ data: unknown }>((resolve) => (finish = () => resolve({ data: 1 })));
  const long = { 1: "0".repeat(5000) };
  const deleting = p.run(call("c1", "file", "delete", long), tool("file"), next);
  const rendering = p.run(call("c2", "render", undefined, { 2: 10n }), tool("render"), next);
  await tick();
  look(card, "confirm: two cards", [JSON.stringify(long, null, 2).slice(0, 4000)]);
  look(notice, "notice: an agent acted", ["March"]);
  if (!notice.querySelector("[role=status]")?.textContent) offending.push("the notice said nothing once an agent acted");
  look(activity, "activity: asking");
  card.querySelector("[data-call=c2]")!.querySelector("button[data-answer=deny]")!.dispatch("click");
  card.querySelector("[data-call=c1]")!.querySelector("button[data-answer=once]")!.dispatch("click");
  await tick();
  look(activity, "activity: acting");
  finish();
  await Promise.all([deleting, rendering]);
  look(activity, "activity: done");
  void p.run(call("c3", "edit", undefined, {}, "turn-2"), tool("edit"), next);
  await tick();
  activity.querySelector("button")!.dispatch("click");
  await tick();
  look(activity, "activity: stopped");
  // Undo turn: a done turn with a step offers it; the app's undo fails, then takes the turn back.
  let failUndo = true;
  p.onUndoTurn(() => {
    if (failUndo) throw new Error("the app's words");
  });
  await p.run(call("c4", "edit", undefined, {}, "turn-3"), tool("edit"), (c) => (c.step(), Promise.resolve({ data: 1 })));
  const turn3 = () => p.turns.lines.find((l) => l.turn === "turn-3")!.key;
  look(activity, "activity: undoable");
  await p.turns.undo(turn3());
  look(activity, "activity: undo failed");
  failUndo = false;
  await p.turns.undo(turn3());
  look(activity, "activity: undone");
  for (const kinds of [[], PERMISSION_KINDS, ["change" as const]]) {
    const note = ui.settingsView(p, kinds).note;
    if (!/^⟦[^⟧]*⟧$/.test(note)) offending.push(`settings note: "${note}"`);
  }
}

/** chatBar drives <tabrelay-chat> (@tabrelay/tab/chat) through its states: no key, a turn with a call, a question, a failure, a key kept. */
async function chatBar(): Promise<void> {
  const chat = await import("../src/chat/index.js");
  const permissions = ui.createPermissions({ app, environment: { storage: null, onStorage: () => () => {}, onPageHide: () => () => {} } });
  const provider = chat.scriptedProvider([
    { stop: "tools", parts: [{ type: "call", id: "c1", name: "cells", arguments: {} }] },
    { stop: "end", parts: [{ type: "text", text: "Ledger" }] },
    { stop: "tools", parts: [{ type: "call", id: "c2", name: "ask_person", arguments: { question: "Ledger", choices: ["Claude", "Other"] } }] },
    (r) => new Promise((_, reject) => r.signal.addEventListener("abort", () => reject(r.signal.reason))),
    new chat.ProviderFailure("auth", "Other"),
  ], { name: "Claude" });
  const bar = new chat.Chat({
    app, handlers: { cells: () => { throw new Error("Other"); } }, permissions,
    providers: [chat.anthropicProvider(), provider], keys: new chat.Keys({ tab: null, browser: null }), wait: async () => {},
  });
  const el = mount(chat.TabrelayChat, { chat: bar });
  look(el, "chat: no key");
  (el as unknown as { sendText(t: string, f: boolean): void }).sendText("Ledger", true);
  look(el, "chat: asked for a key");
  bar.setKey("k", false);
  look(el, "chat: a key kept", ["https://api.anthropic.com"]);
  bar.setProvider("scripted");
  bar.setModel("scripted");
  await bar.send("Ledger");
  look(el, "chat: a turn with a failed call");
  await bar.send("Ledger");
  look(el, "chat: a question");
  const stopped = bar.send("Claude");
  await tick();
  look(el, "chat: a turn running");
  bar.stop();
  await stopped;
  look(el, "chat: a turn stopped");
  await bar.send("Claude");
  look(el, "chat: a failure");
}

test("every sentence the elements show comes from the messages table", { timeout: 60_000 + CONFIRM_POLL_MS }, async () => {
  ui.setMessages(sentinel(ui.en) as Messages);
  try {
    await connectPanel();
    await connectionsPanel();
    await permissionsElements();
    await chatBar();
    const states: Status[] = [
      { state: "idle" }, { state: "connecting" }, { state: "connected", pairing: "pairing" },
      { state: "reconnecting", retryAt: Date.now() + 3000, seconds: 3, code: 1006 } as Status,
      ...(Object.keys(ui.en.status.stopped) as (keyof Messages["status"]["stopped"])[]).map((why): Status => ({ state: "stopped", why, message: "English" })),
    ];
    for (const s of states) if (!/^⟦[^⟧]*⟧$/.test(ui.statusWords(s))) offending.push(`status ${s.state}: "${ui.statusWords(s)}"`);
    for (const root of roots) assert.equal(root.getAttribute("lang"), "qaa", `an element says its language, the page having none`);
  } finally {
    ui.setMessages(ui.en);
  }
  assert.deepEqual(offending, [], "sentences shown that the table lacks");
  assert.ok(roots.length >= 10, "every element was drawn");
});

test("the German table has every entry of the English one, each in German", () => {
  assert.deepEqual(shape(de), shape(ui.en));
  const same: string[] = [];
  const walk = (a: unknown, b: unknown, path: string) => {
    if (typeof a === "function" && typeof b === "function") {
      // A value of every type a sentence takes: a string, a count, a list.
      const args = Array.from({ length: Math.max(a.length, 2) }, () => ["x"]);
      const [said, english] = [a(...args), b(...args)];
      assert.ok(typeof said === "string" && said.trim(), `${path} says nothing`);
      if (said === english && !/^(time|dateTime)$/.test(path)) same.push(path);
    } else if (typeof a === "string") {
      if (a === b) same.push(path);
    } else if (typeof a === "object" && a) {
      for (const k of Object.keys(a)) walk((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], path ? `${path}.${k}` : k);
    }
  };
  walk(de, ui.en, "");
  // The same in both: a code's pattern, words German took from English, and joins of the app's own names.
  assert.deepEqual(same.sort(), [
    "chat.failureDetail", "chat.says", "confirm.details", "connect.codePlaceholder", "connections.host", "connections.list", "connections.someActions",
  ]);
});

test("an element in a page of the table's language says nothing; in a page of another, it says its own", () => {
  const html = new FakeNode("html");
  html.setAttribute("lang", "en-GB");
  doc.body.append(html);
  const el = new ui.TabrelayDataSwitch() as unknown as FakeNode & { connectedCallback(): void };
  html.append(el);
  el.connectedCallback();
  assert.equal(el.getAttribute("lang"), null, "an English switch in an English page");
  ui.setMessages(de);
  try {
    el.remove();
    html.setAttribute("lang", "en");
    const german = new ui.TabrelayDataSwitch() as unknown as FakeNode & { connectedCallback(): void };
    html.append(german);
    german.connectedCallback();
    assert.equal(german.getAttribute("lang"), "de", "a German switch in an English page");
    assert.equal(german.querySelector("label")!.textContent, de.dataSwitch.label);
    html.setAttribute("lang", "de-AT");
    german.connectedCallback();
    assert.equal(german.getAttribute("lang"), null, "moved into a German page: the lang it set goes");
    german.setAttribute("lang", "de-CH");
    german.connectedCallback();
    assert.equal(german.getAttribute("lang"), "de-CH", "the app's own lang stays");
  } finally {
    ui.setMessages(ui.en);
    html.remove();
  }
});

test("setMessages draws the elements in the page again, keeping what the person was doing", async () => {
  offending.length = 0;
  const p = ui.createPermissions({ app, environment: { storage: null, onStorage: () => () => {}, onPageHide: () => () => {} } });
  const client = {
    app, connectInfo: async () => info(), approve: async () => { throw new Error("unused"); }, decline: async () => {},
  };
  const panel = mount(ui.TabrelayConnect, { client });
  panel.show("ABCD-EFGH");
  await tick();
  tickBox(panel, "input[data-tool=edit]");
  const list = [{ id: "conn_111111", client: "Claude", host: "claude.ai", createdAt: 1, lastUsedAt: 1, scope: [] }];
  const connections = mount(ui.TabrelayConnections, {
    app,
    client: {
      onConnections: () => () => {}, listConnections: async () => list,
      forget: async () => {}, setScope: async () => list[0]!,
    },
  });
  await tick();
  const elements = [panel, connections, mount(ui.TabrelayConfirm, { permissions: p }), mount(ui.TabrelayActivity, { turns: p.turns }),
    mount(ui.TabrelayDataSwitch, { permissions: p }), mount(ui.TabrelayPermissions, { permissions: p })];
  const tool = app.tools.find((t) => t.name === "file")! as ToolDeclaration;
  const asked = p.run({
    id: "c9", tool: "file", action: "delete", arguments: {}, turn: "t", deadline: Date.now() + 60_000, redelivery: 0,
    connection: { id: "conn_111111", kind: "connector", client: "Claude", host: "claude.ai" },
    signal: new AbortController().signal, progress() {}, log() {}, asking() {}, answered() {}, step() {}, confirm: async () => {},
  }, tool, async () => ({ data: 1 }));
  await tick();
  ui.setMessages(sentinel(ui.en) as Messages);
  try {
    // The question's reasons are its own, said in the language it was asked in.
    const reasons = p.questions.flatMap((q) => q.reasons);
    elements.forEach((el, i) => look(el, `redrawn ${i}`, reasons));
  } finally {
    ui.setMessages(ui.en);
  }
  assert.deepEqual(offending, [], "sentences of the language before");
  assert.equal((panel.querySelector("input[data-tool=edit]") as unknown as { checked: boolean }).checked, true, "the person's tick stays");
  assert.equal((part(panel, "code") as unknown as { value: string }).value, "ABCD-EFGH");
  assert.equal(elements[2]!.querySelector("h2")!.textContent, "Claude (claude.ai) asks to run File (delete)", "the open card, in English again");
  elements[2]!.querySelector("button[data-answer=deny]")!.dispatch("click");
  assert.match(said(await asked), /declined/);
  for (const el of elements) el.remove(), (el as unknown as { disconnectedCallback?(): void }).disconnectedCallback?.();
});

test("statusWords says every state of the client, in the table's language", () => {
  const now = 1_000_000;
  const say = ui.statusWords;
  assert.match(say({ state: "idle" }), /^Not connected/);
  assert.match(say({ state: "connecting" }), /^Connecting/);
  assert.match(say({ state: "connected", pairing: "p" }), /^Connected to the relay/);
  assert.match(say({ state: "reconnecting", retryAt: now + 2500, seconds: 3, code: 1006 }, now), /broke; trying again in 3 s/);
  assert.match(say({ state: "reconnecting", retryAt: now, seconds: 0, code: 4003 }, now), /code 4003\); trying again now/);
  for (const why of Object.keys(STOP_MESSAGES) as StopReason[]) assert.equal(say({ state: "stopped", why, message: "x" }), STOP_MESSAGES[why]);
  ui.setMessages(de);
  try {
    assert.match(say({ state: "reconnecting", retryAt: now + 2500, seconds: 3, code: 4003 }, now), /^Das Relay hat die Verbindung beendet \(Code 4003\); neuer Versuch in 3 s/);
    assert.match(say({ state: "stopped", why: "no-storage", message: STOP_MESSAGES["no-storage"] }), /Website-Daten/);
  } finally {
    ui.setMessages(ui.en);
  }
});
