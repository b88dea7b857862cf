// The chat's providers on recorded API shapes (test/recorded/, no network):
// the request bodies, the streamed replies, the model lists, every failure
// mapped to its kind, the base URL, and the key sent only to the API's origin.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { anthropicBody, anthropicProvider } from "../src/chat/anthropic.js";
import { ProviderFailure, type ModelRequest, type Provider, type WireMessage } from "../src/chat/contract.js";
import { openaiBody, openaiProvider } from "../src/chat/openai.js";
import { packageDir } from "./paths.js";

const recorded = (name: string) => readFileSync(join(packageDir, "test", "recorded", name), "utf8");
const conversation = JSON.parse(recorded("conversation.json")) as Omit<ModelRequest, "signal" | "usage"> & { messages: WireMessage[] };

interface Sent {
  url: string;
  headers: Record<string, string>;
  body: unknown;
}

/** played answers each fetch with the next answer (a Response), keeping what was sent. */
function played(...answers: (() => Response)[]) {
  const sent: Sent[] = [];
  const fetcher = (async (url: string | URL | Request, init?: RequestInit) => {
    sent.push({ url: String(url), headers: { ...(init?.headers as Record<string, string>) }, body: init?.body ? JSON.parse(String(init.body)) : undefined });
    const next = answers.shift();
    if (!next) throw new TypeError("fetch failed");
    return next();
  }) as typeof fetch;
  return { sent, fetcher };
}

const sse = (name: string) => () => new Response(recorded(name), { headers: { "content-type": "text/event-stream" } });
const jsonAnswer = (body: unknown, status = 200, headers: Record<string, string> = {}) => () =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });

function request(o: Partial<ModelRequest> = {}): ModelRequest {
  return { ...conversation, signal: new AbortController().signal, usage: { input: 0, output: 0 }, ...o };
}

describe("the Anthropic Messages API", () => {
  test("the request body is the recorded one: roles alternate, tool results in the user's turn", () => {
    assert.deepEqual(anthropicBody(conversation), JSON.parse(recorded("anthropic-request.json")));
  });

  test("a streamed tool call: text and the call with its arguments from the JSON deltas; tokens counted", async () => {
    const { sent, fetcher } = played(sse("anthropic-stream-tool.sse"));
    const p = anthropicProvider({ fetch: fetcher });
    const texts: string[] = [];
    const req = request({ onText: (t) => texts.push(t) });
    const reply = await p.send(req, "sk-ant-test");
    assert.deepEqual(reply, {
      stop: "tools",
      parts: [{ type: "text", text: "I'll add the note." }, { type: "call", id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", name: "add_note", arguments: { title: "Milk", tags: ["shop"] } }],
    });
    assert.deepEqual(texts, ["I'll add ", "the note."]);
    assert.deepEqual(req.usage, { input: 472, output: 89 });
    assert.equal(sent[0]!.url, "https://api.anthropic.com/v1/messages");
    assert.equal(sent[0]!.headers["x-api-key"], "sk-ant-test");
    assert.equal(sent[0]!.headers["anthropic-dangerous-direct-browser-access"], "true");
    assert.equal(sent[0]!.headers["anthropic-version"], "2023-06-01");
  });

  test("a streamed text reply ends the turn; cached input counts as input", async () => {
    const { fetcher } = played(sse("anthropic-stream-text.sse"));
    const req = request();
    const reply = await anthropicProvider({ fetch: fetcher }).send(req, "k");
    assert.deepEqual(reply, { stop: "end", parts: [{ type: "text", text: "Done: the note is on the board." }] });
    assert.deepEqual(req.usage, { input: 710, output: 15 });
  });

  test("models are listed from the API, paged", async () => {
    const first = { data: [{ type: "model", id: "claude-a", display_name: "Claude A", max_input_tokens: 200000 }], has_more: true, last_id: "claude-a" };
    const { sent, fetcher } = played(jsonAnswer(first), jsonAnswer(JSON.parse(recorded("anthropic-models.json"))));
    const models = await anthropicProvider({ fetch: fetcher }).listModels("k", new AbortController().signal);
    assert.deepEqual(models.map((m) => m.id), ["claude-a", "claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001"]);
    assert.equal(models[0]!.contextTokens, 200000);
    assert.equal(models[1]!.name, "Claude Sonnet 4.5");
    assert.match(sent[1]!.url, /after_id=claude-a/);
  });

  test("every recorded failure maps to its kind", async () => {
    await failuresMap(anthropicProvider, "anthropic-errors.json");
  });

  test("an error event mid-stream is a failure of its kind; a stream cut short is unreadable", async () => {
    const overloaded = 'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":0}}}\n\nevent: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n';
    const { fetcher } = played(() => new Response(overloaded), () => new Response(recorded("anthropic-stream-tool.sse").split("event: message_delta")[0]!));
    const p = anthropicProvider({ fetch: fetcher });
    const req = request();
    await assert.rejects(p.send(req, "k"), (e: ProviderFailure) => e.kind === "busy");
    assert.equal(req.usage.input, 5, "the tokens of a failed call are counted");
    await assert.rejects(p.send(request(), "k"), (e: ProviderFailure) => e.kind === "unreadable");
  });
});

describe("the OpenAI Responses API", () => {
  test("the request body is the recorded one, with store: false", () => {
    assert.deepEqual(openaiBody(conversation), JSON.parse(recorded("openai-request.json")));
  });

  test("a streamed tool call and a streamed text reply; tokens counted", async () => {
    const { sent, fetcher } = played(sse("openai-stream-tool.sse"), sse("openai-stream-text.sse"));
    const p = openaiProvider({ fetch: fetcher });
    const texts: string[] = [];
    const req = request({ onText: (t) => texts.push(t) });
    assert.deepEqual(await p.send(req, "sk-test"), {
      stop: "tools",
      parts: [{ type: "text", text: "I'll add the note." }, { type: "call", id: "call_abc", name: "add_note", arguments: { title: "Milk", tags: ["shop"] } }],
    });
    assert.deepEqual(texts, ["I'll add the note."]);
    assert.deepEqual(req.usage, { input: 512, output: 40 });
    assert.deepEqual(await p.send(request(), "sk-test"), { stop: "end", parts: [{ type: "text", text: "Done: the note is on the board." }] });
    assert.equal(sent[0]!.url, "https://api.openai.com/v1/responses");
    assert.equal(sent[0]!.headers["authorization"], "Bearer sk-test");
    assert.equal((sent[0]!.body as { store: boolean }).store, false);
  });

  test("models are listed from the API", async () => {
    const { sent, fetcher } = played(jsonAnswer(JSON.parse(recorded("openai-models.json"))));
    const models = await openaiProvider({ fetch: fetcher }).listModels("k", new AbortController().signal);
    assert.deepEqual(models.map((m) => m.id), ["gpt-5", "gpt-5-mini"]);
    assert.equal(sent[0]!.url, "https://api.openai.com/v1/models");
  });

  test("every recorded failure maps to its kind", async () => {
    await failuresMap(openaiProvider, "openai-errors.json");
  });
});

describe("base URLs and the key's origin", () => {
  test("a configured base URL (a gateway) is where the calls and the key go; its origin is the provider's", async () => {
    const { sent, fetcher } = played(sse("anthropic-stream-text.sse"), sse("openai-stream-text.sse"));
    const a = anthropicProvider({ baseURL: "http://127.0.0.1:8788/anthropic/", fetch: fetcher });
    const o = openaiProvider({ baseURL: "https://gateway.example.com/openai/v1", fetch: fetcher });
    assert.equal(a.origin, "http://127.0.0.1:8788");
    assert.equal(o.origin, "https://gateway.example.com");
    await a.send(request(), "k1");
    await o.send(request(), "k2");
    assert.deepEqual(sent.map((s) => s.url), ["http://127.0.0.1:8788/anthropic/v1/messages", "https://gateway.example.com/openai/v1/responses"]);
  });

  test("a base URL with credentials, a query or another scheme is refused", () => {
    for (const bad of ["ftp://x.example", "https://u:p@x.example", "https://x.example/?key=1", "not a url"]) {
      assert.throws(() => anthropicProvider({ baseURL: bad }), TypeError, bad);
    }
  });

  test("a network failure is network; Stop aborts the call with the signal's reason", async () => {
    const { fetcher } = played();
    await assert.rejects(anthropicProvider({ fetch: fetcher }).send(request(), "k"), (e: ProviderFailure) => e.kind === "network");
    const stop = new AbortController();
    const hanging = (async (_u: unknown, init?: RequestInit) => new Promise((_, reject) => init?.signal?.addEventListener("abort", () => reject(new TypeError("aborted"))))) as typeof fetch;
    const pending = openaiProvider({ fetch: hanging }).send(request({ signal: stop.signal }), "k");
    stop.abort(new Error("stopped by the person"));
    await assert.rejects(pending, /stopped by the person/);
  });
});

async function failuresMap(make: (o: { fetch: typeof fetch }) => Provider, file: string) {
  const cases = JSON.parse(recorded(file)) as { status: number; headers?: Record<string, string>; body?: unknown; text?: string; kind: string; retryAfterMs?: number }[];
  for (const c of cases) {
    const answer = () => new Response(c.text ?? JSON.stringify(c.body), { status: c.status, headers: c.headers ?? {} });
    const { fetcher } = played(answer);
    await assert.rejects(make({ fetch: fetcher }).send(request(), "k"), (e: unknown) => {
      assert.ok(e instanceof ProviderFailure);
      assert.equal(e.kind, c.kind, `${c.status} ${JSON.stringify(c.body ?? c.text)}`);
      if (c.retryAfterMs !== undefined) assert.equal(e.retryAfterMs, c.retryAfterMs);
      return true;
    });
  }
}
