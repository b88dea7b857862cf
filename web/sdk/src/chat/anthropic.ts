// The Anthropic Messages API, called from the browser
// (anthropic-dangerous-direct-browser-access): POST {base}/v1/messages
// streamed, GET {base}/v1/models. The shapes are recorded in
// test/recorded/anthropic-*.

import type { FailureKind } from "../chat-messages.js";
import type { JsonObject } from "../schema.js";
import {
  ProviderFailure, type AssistantPart, type ModelInfo, type ModelReply, type ModelRequest, type Provider,
  type ProviderOptions, type StopReason, type WireMessage,
} from "./contract.js";
import { num, record, text as str } from "../protocol.js";
import { baseOf, events, json, parseArguments, request, type ErrorReader } from "./http.js";

export const ANTHROPIC_BASE_URL = "https://api.anthropic.com";
const VERSION = "2023-06-01";

/** The error types of the Messages API, as kinds. */
const ERROR_KINDS: Readonly<Record<string, FailureKind>> = {
  authentication_error: "auth", permission_error: "permission", billing_error: "quota", not_found_error: "model",
  rate_limit_error: "rate", overloaded_error: "busy", api_error: "busy", timeout_error: "busy", request_too_large: "too-long",
};

const readError: ErrorReader = (_status, body) => {
  const e = record(record(body)["error"]);
  const type = str(e["type"]), message = str(e["message"]);
  if (type === "invalid_request_error" && /prompt is too long|context window|too many (input )?tokens/i.test(message)) return { kind: "too-long", message };
  // A spent balance is an invalid_request_error (400) of its own words.
  if (type === "invalid_request_error" && /credit balance/i.test(message)) return { kind: "quota", message };
  return { kind: ERROR_KINDS[type], message };
};

/** anthropicProvider returns the Anthropic provider; options.baseURL names a gateway or proxy in place of api.anthropic.com. */
export function anthropicProvider(options: ProviderOptions = {}): Provider {
  const { base, origin } = baseOf(options.baseURL ?? ANTHROPIC_BASE_URL);
  const fetcher = options.fetch ?? ((...a: Parameters<typeof fetch>) => fetch(...a));
  const headers = (key: string) => ({
    "content-type": "application/json", "x-api-key": key, "anthropic-version": VERSION,
    "anthropic-dangerous-direct-browser-access": "true",
  });
  return {
    id: "anthropic", name: "Claude", origin,
    async listModels(key, signal) {
      const out: ModelInfo[] = [];
      for (let after = ""; ;) {
        const url = `${base}/v1/models?limit=100${after ? "&after_id=" + encodeURIComponent(after) : ""}`;
        const res = await request(fetcher, url, { method: "GET", headers: headers(key), signal }, readError);
        const page = record(await res.json().catch(() => undefined));
        if (!Array.isArray(page["data"])) throw new ProviderFailure("unreadable", "a model list without data");
        for (const m of page["data"].map(record)) {
          const id = str(m["id"]);
          const window = num(m["max_input_tokens"]);
          if (id) out.push({ id, name: str(m["display_name"]) || id, ...(window ? { contextTokens: window } : {}) });
        }
        after = page["has_more"] === true ? str(page["last_id"]) : "";
        if (!after) return out;
      }
    },
    async send(req, key) {
      const body = JSON.stringify(anthropicBody(req));
      const res = await request(fetcher, `${base}/v1/messages`, { method: "POST", headers: headers(key), body, signal: req.signal }, readError);
      return readStream(res, req);
    },
  };
}

/** anthropicBody is the Messages API request of a model call. */
export function anthropicBody(req: Omit<ModelRequest, "signal" | "usage" | "onText">): Record<string, unknown> {
  const messages: { role: "user" | "assistant"; content: Record<string, unknown>[] }[] = [];
  for (const m of req.messages) {
    const role = m.role === "assistant" ? "assistant" : "user";
    const content = contentOf(m);
    const last = messages[messages.length - 1];
    // The API wants the roles to alternate: tool results and the person's next words are one user message.
    if (last && last.role === role) last.content.push(...content);
    else messages.push({ role, content });
  }
  return {
    model: req.model, max_tokens: req.maxTokens, stream: true,
    ...(req.system ? { system: req.system } : {}),
    ...(req.tools.length ? { tools: req.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema })) } : {}),
    messages,
  };
}

function contentOf(m: WireMessage): Record<string, unknown>[] {
  switch (m.role) {
    case "user":
      return [{ type: "text", text: m.text }];
    case "assistant":
      return m.parts.filter((p) => p.type === "call" || p.text !== "").map((p) =>
        p.type === "text" ? { type: "text", text: p.text } : { type: "tool_use", id: p.id, name: p.name, input: p.arguments });
    case "tool":
      return m.results.map((r) => ({
        type: "tool_result", tool_use_id: r.id, is_error: r.isError,
        content: [
          { type: "text", text: r.text },
          ...(r.images ?? []).map((i) => ({ type: "image", source: { type: "base64", media_type: i.mimeType, data: i.data } })),
        ],
      }));
  }
}

const STOPS: Readonly<Record<string, StopReason>> = { end_turn: "end", stop_sequence: "end", tool_use: "tools", max_tokens: "length", refusal: "refusal", pause_turn: "end" };

/** readStream reads the streamed events of one Messages call into a reply. */
async function readStream(res: Response, req: ModelRequest): Promise<ModelReply> {
  const blocks: { type: string; text: string; id: string; name: string; json: string }[] = [];
  let stop: StopReason | undefined;
  for await (const e of events(res.body)) {
    const ev = json(e);
    switch (str(ev["type"])) {
      case "message_start": {
        const u = record(record(ev["message"])["usage"]);
        req.usage.input += num(u["input_tokens"]) + num(u["cache_creation_input_tokens"]) + num(u["cache_read_input_tokens"]);
        req.usage.output += num(u["output_tokens"]);
        break;
      }
      case "content_block_start": {
        const b = record(ev["content_block"]);
        blocks[num(ev["index"])] = { type: str(b["type"]), text: str(b["text"]), id: str(b["id"]), name: str(b["name"]), json: "" };
        break;
      }
      case "content_block_delta": {
        const b = blocks[num(ev["index"])], d = record(ev["delta"]);
        if (!b) throw new ProviderFailure("unreadable", "a delta of a block that never started");
        if (d["type"] === "text_delta") {
          b.text += str(d["text"]);
          req.onText?.(str(d["text"]));
        } else if (d["type"] === "input_json_delta") b.json += str(d["partial_json"]);
        break;
      }
      case "message_delta": {
        const reason = str(record(ev["delta"])["stop_reason"]);
        if (reason) stop = STOPS[reason] ?? "end";
        // The usage of message_delta is cumulative: the output so far.
        const out = num(record(ev["usage"])["output_tokens"]);
        if (out) req.usage.output = out;
        break;
      }
      case "error": {
        const err = record(ev["error"]);
        throw new ProviderFailure(ERROR_KINDS[str(err["type"])] ?? "busy", str(err["message"]) || "an error event");
      }
    }
  }
  if (!stop) throw new ProviderFailure("unreadable", "the answer ended before message_delta said why");
  const parts: AssistantPart[] = [];
  for (const b of blocks) {
    if (!b) continue;
    if (b.type === "text") parts.push({ type: "text", text: b.text });
    else if (b.type === "tool_use") parts.push({ type: "call", id: b.id, name: b.name, arguments: parseArguments(b.json) as JsonObject });
  }
  return { parts, stop };
}
