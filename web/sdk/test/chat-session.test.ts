// The chat's way in through the one tool call (src/chat/session.ts,
// src/toolcall.ts) with the person's permissions (createPermissions): the
// confirm card asks as "Claude (chat)", Allow once runs the call, Stop
// withdraws a waiting card, the data switch refuses a cell-level read, a
// refused key fails in words — and nothing of the key is in the
// conversation or the export.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Reply, type Handlers } from "../src/calls.js";
import { ProviderFailure, type ModelReply } from "../src/chat/contract.js";
import { noteText, WITHHELD, type Conversation } from "../src/chat/conversation.js";
import { Keys } from "../src/chat/keys.js";
import { scriptedProvider, type ScriptStep } from "../src/chat/scripted.js";
import { Chat } from "../src/chat/session.js";
import { defineApp } from "../src/tools.js";
import { chatWords } from "../src/chat-messages.js";
import { de } from "../src/locales/de.js";
import { en } from "../src/ui/messages-en.js";
import { setMessages } from "../src/ui/messages.js";
import { createPermissions, type Answer, type Question } from "../src/ui/permissions-model.js";
import { DATA_SENTENCES } from "../src/ui/data-scope.js";
import { flush, MemoryStorage } from "./fakes.js";

/** lastNote says the conversation's last entry, a note, in English. */
function lastNote(c: Conversation): string {
  const e = c.entries.at(-1);
  assert.ok(e?.role === "note", "the last entry is a note");
  return noteText(e.note);
}

const app = defineApp({
  version: "chat-1", app: { name: "notes", title: "Notes" }, instructions: "Notes tools.", dataTag: "notes-data",
  tools: [
    { name: "list_notes", description: "Lists notes.", inputSchema: { type: "object" }, result: "summaries" },
    { name: "read_note", description: "Reads a note's text.", inputSchema: { type: "object" }, result: "cells" },
    { name: "delete_note", title: "Delete note", description: "Deletes a note.", inputSchema: { type: "object" }, result: "none", permissions: ["change", "deletes-saved"] },
  ],
});

const call = (id: string, name: string): ModelReply => ({ stop: "tools", parts: [{ type: "call", id, name, arguments: {} }] });
const text = (t: string): ModelReply => ({ stop: "end", parts: [{ type: "text", text: t }] });

function setup(steps: ScriptStep[], confirm?: (q: Question) => Promise<Answer>) {
  const ran: string[] = [];
  const permissions = createPermissions({
    app, environment: { storage: null, onStorage: () => () => {}, onPageHide: () => () => {} }, ...(confirm ? { confirm } : {}),
  });
  const handlers: Handlers<typeof app> = {
    list_notes: () => (ran.push("list_notes"), { notes: 2 }),
    read_note: () => (ran.push("read_note"), { text: "secret cell" }),
    delete_note: () => (ran.push("delete_note"), { deleted: 1 }),
  };
  const provider = scriptedProvider(steps, { name: "Claude" });
  const keys = new Keys({ tab: new MemoryStorage(), browser: new MemoryStorage() });
  const chat = new Chat({ app, handlers, permissions, providers: [provider], keys, wait: async () => {} });
  chat.setModel("scripted");
  return { chat, provider, permissions, ran };
}

describe("the chat's calls go through the one tool call", () => {
  test("a call that asks shows a card from \"Claude (chat)\"; Allow once runs it; the result is between the app's data tags", async () => {
    const asked: Question[] = [];
    const t = setup([call("c1", "delete_note"), text("Deleted.")], (q) => (asked.push(q), Promise.resolve("once")));
    assert.deepEqual(await t.chat.send("Delete the note"), { kind: "done" });
    assert.equal(asked.length, 1);
    assert.equal(asked[0]!.who, "Claude (chat)");
    assert.deepEqual(asked[0]!.connection, { id: t.chat.conversation.id, kind: "chat", client: "Claude", host: "chat" });
    assert.deepEqual(t.ran, ["delete_note"]);
    const result = t.provider.requests[1]!.messages.at(-1);
    assert.ok(result?.role === "tool");
    assert.equal(result.results[0]!.text, '<notes-data>{"deleted":1}</notes-data>');
  });

  test("Stop while the card waits withdraws it; the call is not run and the turn ends stopped", async () => {
    let question: Question | undefined;
    const t = setup([call("c1", "delete_note")], (q) => ((question = q), new Promise<Answer>(() => {})));
    const turn = t.chat.send("Delete the note");
    for (let i = 0; i < 50 && !question; i++) await flush();
    assert.ok(question, "the card shows");
    assert.equal(t.permissions.questions.length, 1);
    t.chat.stop();
    assert.equal(question.signal.aborted, true, "the card is withdrawn");
    assert.deepEqual(await turn, { kind: "stopped" });
    assert.deepEqual(t.ran, []);
    assert.equal(t.permissions.questions.length, 0);
    assert.equal(t.permissions.turns.lines[0]?.state, "stopped", "the activity line says stopped");
  });

  test("Stop on the activity line's line of the chat's turn stops the chat's turn too", async () => {
    let question: Question | undefined;
    const t = setup([call("c1", "delete_note"), text("never")], (q) => ((question = q), new Promise<Answer>(() => {})));
    const turn = t.chat.send("Delete the note");
    for (let i = 0; i < 50 && !question; i++) await flush();
    const line = t.permissions.turns.lines[0]!;
    assert.equal(line.who, "Claude (chat)");
    t.permissions.turns.stop(line.key);
    assert.deepEqual(await turn, { kind: "stopped" });
    assert.equal(t.provider.requests.length, 1, "no model call after the Stop");
    assert.deepEqual(t.ran, []);
  });

  test("the data switch refuses a cell-level read for the chat as for the connector, and the result is marked kept out", async () => {
    const t = setup([call("c1", "read_note"), text("I cannot read it.")]);
    t.permissions.setSummariesOnly(true);
    await t.chat.send("Read the note");
    assert.deepEqual(t.ran, []);
    const result = t.provider.requests[1]!.messages.at(-1);
    assert.ok(result?.role === "tool");
    assert.equal(result.results[0]!.text, `<notes-data>null</notes-data>\n\n${DATA_SENTENCES.cells}`);
    assert.match(t.chat.sentLine(t.chat.conversation.entries[0]!.turn), /kept out of 1 result/);
  });

  test("turned on later, the switch holds back what it keeps out when the conversation is sent again: unclassified results, pictures, single-cell fields", async () => {
    const wide = defineApp({
      version: "chat-w", app: { name: "sheet", title: "Sheet" }, instructions: "Sheet tools.",
      tools: [
        { name: "peek", description: "A read nobody classified.", inputSchema: { type: "object" } },
        { name: "chart", description: "A chart of a group.", inputSchema: { type: "object" }, result: "summaries" },
        { name: "stats", description: "Stats with extremes.", inputSchema: { type: "object" }, result: "summaries", dataScope: { singleCell: ["max"] } },
        { name: "count", description: "Counts.", inputSchema: { type: "object" }, result: "summaries" },
      ],
    });
    const permissions = createPermissions({ app: wide, environment: { storage: null, onStorage: () => () => {}, onPageHide: () => () => {} } });
    const png = { mimeType: "image/png", data: "iVBORw0KGgo=" };
    const handlers: Handlers<typeof wide> = {
      peek: () => ({ cell: "secret-peek" }),
      chart: () => new Reply({ data: { bars: 2 }, images: [png] }),
      stats: () => ({ mean: 2, max: "secret-max" }),
      count: () => ({ count: 3 }),
    };
    const several: ModelReply = { stop: "tools", parts: ["peek", "chart", "stats", "count"].map((name, i) => ({ type: "call", id: `w${i}`, name, arguments: {} })) };
    const provider = scriptedProvider([several, text("Read."), text("Again.")], { name: "Claude" });
    const keys = new Keys({ tab: new MemoryStorage(), browser: new MemoryStorage() });
    const chat = new Chat({ app: wide, handlers, permissions, providers: [provider], keys, wait: async () => {} });
    chat.setModel("scripted");
    await chat.send("Read everything");
    permissions.setSummariesOnly(true);
    await chat.send("And now?");
    const resent = provider.requests[2]!.messages.find((m) => m.role === "tool");
    assert.ok(resent?.role === "tool");
    const sent = JSON.stringify(resent.results);
    assert.doesNotMatch(sent, /secret-peek|secret-max|iVBORw0KGgo/, "nothing the switch keeps out goes again");
    assert.deepEqual(resent.results.map((r) => r.text === WITHHELD), [true, true, true, false], "a plain summary goes again as it was");
  });

  test("an app with a tool named ask_person, the chat's own, is refused when the chat is made", () => {
    const clash = defineApp({
      version: "chat-c", app: { name: "clash", title: "Clash" }, instructions: "Tools.",
      tools: [{ name: "ask_person", description: "The app's own.", inputSchema: { type: "object" }, result: "none" }],
    });
    const provider = scriptedProvider([], { name: "Claude" });
    assert.throws(() => new Chat({ app: clash, handlers: { ask_person: () => undefined }, providers: [provider] }), /tool named ask_person/);
  });

  test("the model is told the switch and the settings with the message after they changed", async () => {
    const t = setup([text("a"), text("b"), text("c")]);
    await t.chat.send("one");
    await t.chat.send("two");
    t.permissions.setSummariesOnly(true);
    await t.chat.send("three");
    const said = t.provider.requests.map((r) => (r.messages.at(-1) as { text: string }).text);
    assert.match(said[0]!, /Agents may read cell values/);
    assert.equal(said[1], "two");
    assert.match(said[2]!, /names and summaries only[\s\S]*three$/);
  });

  test("a refused key fails the turn in one line of what to do; the key is in neither the conversation nor the export", async () => {
    const t = setup([new ProviderFailure("auth", "invalid x-api-key")]);
    t.chat.setKey("sk-ant-SECRET", false);
    const end = await t.chat.send("Hi");
    assert.equal(end.kind, "failed");
    assert.match(lastNote(t.chat.conversation), /refused the key: check it, or enter another/);
    assert.doesNotMatch(JSON.stringify(t.chat.conversation), /SECRET/);
    assert.doesNotMatch(t.chat.exportMarkdown(), /SECRET/);
  });

  test("the chat speaks the messages table's language: setMessages(de) turns its words, notes and sent line German", async () => {
    const t = setup([new ProviderFailure("busy", "Overloaded"), new ProviderFailure("auth", "invalid x-api-key")]);
    setMessages(de);
    try {
      assert.equal(chatWords().send, "Senden");
      await t.chat.send("Hallo");
      assert.match(lastNote(t.chat.conversation), /Der Anbieter hat den Schlüssel abgelehnt/);
      assert.match(t.chat.exportMarkdown(), /Der Anbieter hat den Schlüssel abgelehnt/);
    } finally {
      setMessages(en);
    }
    assert.match(lastNote(t.chat.conversation), /The provider refused the key/, "a note is said in the language of the moment it is shown");
  });
});
