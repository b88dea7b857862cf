// The chat's agent loop (src/chat/loop.ts) with a scripted model: one
// message is one turn; the model's calls run one after the other through
// runTool; ask_person ends the turn; Stop; the token budget before each
// model call and each retry; busy and rate-limited providers waited out;
// a conversation too long summarised once (a new epoch); every call
// counted; the person's settings told when they change; results that
// could hold cell values withheld once the switch is on.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ASK_PERSON_TOOL } from "../src/chat/ask.js";
import { ProviderFailure, type AssistantPart, type ModelReply, type ModelRequest } from "../src/chat/contract.js";
import { Conversation, noteText, sentLine, WITHHELD, type ResultEntry } from "../src/chat/conversation.js";
import { runTurn, type LoopCall, type LoopOptions } from "../src/chat/loop.js";
import { scriptedProvider, type ScriptStep } from "../src/chat/scripted.js";

/** lastNote says the conversation's last entry, a note, in English. */
function lastNote(c: Conversation): string {
  const e = c.entries.at(-1);
  assert.ok(e?.role === "note", "the last entry is a note");
  return noteText(e.note);
}

const tools = [{ name: "list_notes", description: "Lists.", inputSchema: { type: "object" } }, { name: "read_cells", description: "Cells.", inputSchema: { type: "object" } }, ASK_PERSON_TOOL];

const text = (t: string): ModelReply => ({ stop: "end", parts: [{ type: "text", text: t }] });
const calls = (...c: [string, string, Record<string, unknown>?][]): ModelReply => ({
  stop: "tools", parts: c.map(([id, name, args]): AssistantPart => ({ type: "call", id, name, arguments: (args ?? {}) as never })),
});
/** costs makes a step that reports usage: input tokens and output tokens. */
const costs = (input: number, output: number, reply: ModelReply): ScriptStep => (r: ModelRequest) => ((r.usage.input += input), (r.usage.output += output), reply);

function setup(steps: ScriptStep[], o: Partial<LoopOptions> = {}) {
  const provider = scriptedProvider(steps);
  const c = new Conversation("chat-1", tools);
  const ran: LoopCall[] = [];
  const waits: number[] = [];
  let switchOn = false;
  let context = "settings v1";
  const options: LoopOptions = {
    provider, key: () => "k", model: "m", system: "sys", maxTokens: 100, budget: 1_000_000,
    runTool: async (call) => {
      ran.push(call);
      const cells = call.name === "read_cells";
      return { id: call.id, name: call.name, text: `<tabrelay-data>{"ran":"${call.name}"}</tabrelay-data>`, isError: false, cells, keptOut: cells && switchOn } satisfies ResultEntry;
    },
    summariesOnly: () => switchOn, context: () => context,
    wait: async (ms) => void waits.push(ms),
    ...o,
  };
  const send = (t: string, signal = new AbortController().signal) => runTurn(c, t, options, signal);
  return { provider, c, ran, waits, send, options, setSwitch: (on: boolean) => (switchOn = on), setContext: (s: string) => (context = s) };
}

describe("a turn", () => {
  test("the model's calls run one after the other, in its order, then the model answers", async () => {
    const t = setup([calls(["a", "list_notes"], ["b", "read_cells"]), text("Two notes.")]);
    assert.deepEqual(await t.send("How many?"), { kind: "done" });
    assert.deepEqual(t.ran.map((r) => r.id), ["a", "b"]);
    assert.equal(new Set(t.ran.map((r) => r.turn)).size, 1, "one message is one turn");
    const second = t.provider.requests[1]!.messages;
    assert.deepEqual(second.map((m) => m.role), ["user", "assistant", "tool"]);
    assert.deepEqual(t.c.entries.map((e) => e.role), ["user", "assistant", "tool", "assistant"]);
  });

  test("ask_person ends the turn with its question; the calls after it are not run; bad choices are refused", async () => {
    const t = setup([
      calls(["q0", "ask_person", { question: "Which?", choices: ["Only one"] }]),
      calls(["q0b", "ask_person", { question: "Which? ".repeat(90), choices: ["A", "B"] }]),
      calls(["q1", "ask_person", { question: "Which note?", choices: ["Milk", "Eggs"] }], ["c", "list_notes"]),
    ]);
    const end = await t.send("Delete a note");
    assert.deepEqual(end, { kind: "ask", ask: { question: "Which note?", choices: ["Milk", "Eggs"] } });
    assert.equal(t.ran.length, 0);
    const results = t.c.entries.filter((e) => e.role === "tool").flatMap((e) => (e.role === "tool" ? e.results : []));
    assert.match(results[0]!.text, /2 to 5 choices/);
    assert.equal(results[0]!.isError, true);
    assert.match(results[1]!.text, /at most 500 characters/, "a question the card could not show as one sentence");
    assert.equal(results[1]!.isError, true);
    assert.match(results[3]!.text, /Not run/);
    assert.equal(t.provider.requests.length, 3);
  });

  test("Stop during a model call ends the turn; the conversation stays valid for the next", async () => {
    const stop = new AbortController();
    const t = setup([(r) => new Promise<ModelReply>((_, reject) => {
      r.usage.input += 40; // the provider had read the input when it was stopped
      r.signal.addEventListener("abort", () => reject(r.signal.reason));
      stop.abort(new Error("stopped"));
    }), text("Hello again.")]);
    assert.deepEqual(await t.send("Hi", stop.signal), { kind: "stopped" });
    assert.equal(t.c.tokens.input, 40, "a stopped call is counted");
    assert.equal(t.c.entries.at(-1)!.role, "note");
    assert.deepEqual(await t.send("Hi?"), { kind: "done" });
    assert.deepEqual(t.provider.requests[1]!.messages.map((m) => m.role), ["user", "user"], "the stopped turn's message, then the new one");
  });

  test("Stop while a provider that does not heed it answers with calls: the calls are answered unrun, and the next turn's conversation is valid", async () => {
    const stop = new AbortController();
    const t = setup([(r) => (stop.abort(new Error("stopped")), r.usage.input += 10, calls(["a", "list_notes"])), text("Hello again.")]);
    // The scripted provider heeds the signal after a step; this one gives the step's reply all the same.
    const heedless = { ...t.provider, send: (r: ModelRequest, key: string) => t.provider.send({ ...r, signal: new AbortController().signal }, key) };
    const send = (text: string, signal: AbortSignal) => runTurn(t.c, text, { ...t.options, provider: heedless }, signal);
    assert.deepEqual(await send("Go", stop.signal), { kind: "stopped" });
    assert.deepEqual(t.ran, [], "nothing ran");
    assert.deepEqual(await send("Again", new AbortController().signal), { kind: "done" });
    const wire = t.provider.requests[1]!.messages;
    assert.deepEqual(wire.map((m) => m.role), ["user", "assistant", "tool", "user"], "every call has its result");
    const tool = wire[2]!;
    assert.ok(tool.role === "tool" && /stopped this turn/.test(tool.results[0]!.text));
  });

  test("Stop during a tool call answers the remaining calls without running them", async () => {
    const stop = new AbortController();
    const t = setup([calls(["a", "list_notes"], ["b", "list_notes"])], {
      runTool: async (call) => (stop.abort(new Error("stopped")), { id: call.id, name: call.name, text: "stopped", isError: true, cells: false, keptOut: false }),
    });
    assert.deepEqual(await t.send("Go", stop.signal), { kind: "stopped" });
    const tool = t.c.entries.find((e) => e.role === "tool");
    assert.ok(tool?.role === "tool");
    assert.deepEqual(tool.results.map((r) => r.id), ["a", "b"], "every call has its result");
    assert.match(tool.results[1]!.text, /stopped this turn/);
  });
});

describe("budgets and retries", () => {
  test("the budget is checked before each model call: a turn over it stops with a note", async () => {
    const t = setup([costs(600, 100, calls(["a", "list_notes"])), costs(900, 50, text("never"))], { budget: 1000 });
    assert.deepEqual(await t.send("Go"), { kind: "limit" });
    assert.equal(t.provider.requests.length, 1, "the second call would send at least the first's 600 input tokens: 700 + 600 > 1000");
    assert.match(lastNote(t.c), /budget of 1000 tokens/);
  });

  test("busy and rate-limited providers are waited out (Retry-After first), every try counted", async () => {
    const busy = new ProviderFailure("busy", "Overloaded");
    const rate = new ProviderFailure("rate", "slow down", 7000);
    const t = setup([busy, rate, costs(10, 5, text("ok"))]);
    assert.deepEqual(await t.send("Go"), { kind: "done" });
    assert.deepEqual(t.waits, [1000, 7000]);
    assert.equal(t.provider.requests.length, 3);
  });

  test("the budget is checked before a retry too", async () => {
    const t = setup([costs(800, 0, calls(["a", "list_notes"])), (r) => ((r.usage.input += 700), Promise.reject(new ProviderFailure("busy", "x")))], { budget: 2000 });
    assert.deepEqual(await t.send("Go"), { kind: "limit" });
    assert.equal(t.provider.requests.length, 2, "800 + 700 spent, and the retry would send at least 700 more: over 2000");
    assert.equal(t.waits.length, 0, "no wait for a try the budget refuses");
  });

  test("a provider busy past the retries fails the turn with what to do; auth fails at once", async () => {
    const busy = () => new ProviderFailure("busy", "Overloaded");
    const t = setup([busy(), busy(), busy(), busy(), busy()]);
    const end = await t.send("Go");
    assert.equal(end.kind, "failed");
    assert.equal(t.waits.length, 4);
    assert.match(lastNote(t.c), /busy or down: wait a minute/);
    const a = setup([new ProviderFailure("auth", "invalid x-api-key")]);
    assert.equal((await a.send("Go")).kind, "failed");
    assert.equal(a.waits.length, 0);
  });

  test("an unreadable answer is asked for once more", async () => {
    const t = setup([new ProviderFailure("unreadable", "x"), text("ok")]);
    assert.deepEqual(await t.send("Go"), { kind: "done" });
    const u = setup([new ProviderFailure("unreadable", "x"), new ProviderFailure("unreadable", "x"), text("ok")]);
    assert.equal((await u.send("Go")).kind, "failed");
  });
});

describe("the context rule", () => {
  test("a conversation that would not fit the window is summarised once at the start of a turn: a new epoch, the summary counted", async () => {
    const t = setup([costs(900, 50, text("first")), costs(950, 40, text("SUMMARY")), costs(100, 10, text("second"))], { contextTokens: 1000 });
    await t.send("one");
    await t.send("two");
    assert.equal(t.c.epoch, 2);
    assert.equal(t.c.summary, "SUMMARY");
    const summarising = t.provider.requests[1]!;
    assert.match((summarising.messages.at(-1) as { text: string }).text, /Summarise this conversation/);
    const after = t.provider.requests[2]!.messages;
    assert.match((after[0] as { text: string }).text, /A summary of the conversation so far[\s\S]*SUMMARY/);
    assert.equal(after.length, 2, "the summary and the new message: earlier messages are not sent again");
    assert.equal(t.c.tokens.input + t.c.tokens.output, 900 + 50 + 950 + 40 + 100 + 10);
  });

  test("a turn that failed without counting tokens leaves the conversation's size known: the next turn still summarises first", async () => {
    const t = setup([costs(900, 50, text("first")), new ProviderFailure("auth", "bad key"), costs(950, 40, text("SUMMARY")), costs(100, 10, text("second"))], { contextTokens: 1000 });
    await t.send("one");
    assert.equal((await t.send("two")).kind, "failed", "its summary was refused");
    await t.send("three");
    const third = t.provider.requests[2]!;
    assert.match((third.messages.at(-1) as { text: string }).text, /Summarise this conversation/, "the 950 tokens of the last call that counted are over the window");
    assert.equal(t.c.epoch, 2);
  });

  test("a too-long answer mid-turn summarises once and tries again; a second too-long fails", async () => {
    const long = () => new ProviderFailure("too-long", "prompt is too long");
    const t = setup([long(), text("SUMMARY"), text("ok")]);
    assert.deepEqual(await t.send("Go"), { kind: "done" });
    assert.equal(t.c.epoch, 2);
    const u = setup([long(), text("SUMMARY"), long()]);
    assert.equal((await u.send("Go")).kind, "failed");
  });

  test("the person's settings are told with the first message and again only when they change", async () => {
    const t = setup([text("a"), text("b"), text("c")]);
    await t.send("one");
    await t.send("two");
    t.setContext("settings v2");
    await t.send("three");
    const firsts = t.provider.requests.map((r) => (r.messages.at(-1) as { text: string }).text);
    assert.deepEqual(firsts, ["settings v1\n\none", "two", "settings v2\n\nthree"]);
    assert.deepEqual(t.provider.requests[0]!.tools, t.provider.requests[2]!.tools, "the tool list never changes within a conversation");
  });

  test("with the switch on, earlier results that could hold cell values are withheld when sent again; the sent line says so", async () => {
    const t = setup([calls(["a", "read_cells"], ["b", "list_notes"]), text("done"), text("again")]);
    await t.send("Read");
    const turn1 = t.c.entries[0]!.turn;
    assert.equal(sentLine(t.c, turn1, "Claude"), "Sent to Claude: the conversation, 2 tool results.");
    t.setSwitch(true);
    await t.send("Again");
    const resent = t.provider.requests[2]!.messages.find((m) => m.role === "tool");
    assert.ok(resent?.role === "tool");
    assert.equal(resent.results[0]!.text, WITHHELD);
    assert.match(resent.results[1]!.text, /list_notes/);
    assert.match(sentLine(t.c, t.c.entries.at(-1)!.turn, "Claude"), /kept out of 1 result/);
  });
});
