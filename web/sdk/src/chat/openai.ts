// The OpenAI Responses API with store: false (nothing kept on OpenAI's
// side; each call sends the conversation): POST {base}/responses streamed,
// GET {base}/models. The shapes are recorded in test/recorded/openai-*.

import type { FailureKind } from "../chat-messages.js";
import type { JsonObject } from "../schema.js";
import {
  ProviderFailure, type AssistantPart, type ModelReply, type ModelRequest, type Provider, type ProviderOptions,
  type WireMessage,
} from "./contract.js";
import { num, record, text as str } from "../protocol.js";
import { baseOf, events, json, parseArguments, request, type ErrorReader } from "./http.js";

export const OPENAI_BASE_URL = "https://api.openai.com/v1";

/** The error codes and types of the API, as kinds. */
const ERROR_KINDS: Readonly<Record<string, FailureKind>> = {
  invalid_api_key: "auth", insufficient_quota: "quota", rate_limit_exceeded: "rate", model_not_found: "model",
  context_length_exceeded: "too-long", server_error: "busy", authentication_error: "auth", permission_error: "permission",
};

const readError: ErrorReader = (_status, body) => {
  const e = record(record(body)["error"]);
  return { kind: ERROR_KINDS[str(e["code"])] ?? ERROR_KINDS[str(e["type"])], message: str(e["message"]) };
};

/** openaiProvider returns the OpenAI provider; options.baseURL names a gateway or proxy in place of api.openai.com/v1. */
export function openaiProvider(options: ProviderOptions = {}): Provider {
  const { base, origin } = baseOf(options.baseURL ?? OPENAI_BASE_URL);
  const fetcher = options.fetch ?? ((...a: Parameters<typeof fetch>) => fetch(...a));
  const headers = (key: string) => ({ "content-type": "application/json", authorization: "Bearer " + key });
  return {
    id: "openai", name: "ChatGPT", origin,
    async listModels(key, signal) {
      const res = await request(fetcher, `${base}/models`, { method: "GET", headers: headers(key), signal }, readError);
      const page = record(await res.json().catch(() => undefined));
      if (!Array.isArray(page["data"])) throw new ProviderFailure("unreadable", "a model list without data");
      return page["data"].map(record).map((m) => str(m["id"])).filter(Boolean).sort().map((id) => ({ id, name: id }));
    },
    async send(req, key) {
      const body = JSON.stringify(openaiBody(req));
      const res = await request(fetcher, `${base}/responses`, { method: "POST", headers: headers(key), body, signal: req.signal }, readError);
      return readStream(res, req);
    },
  };
}

/** openaiBody is the Responses API request of a model call (store: false). */
export function openaiBody(req: Omit<ModelRequest, "signal" | "usage" | "onText">): Record<string, unknown> {
  return {
    model: req.model, store: false, stream: true, max_output_tokens: req.maxTokens,
    ...(req.system ? { instructions: req.system } : {}),
    ...(req.tools.length ? { tools: req.tools.map((t) => ({ type: "function", name: t.name, description: t.description, parameters: t.inputSchema, strict: false })) } : {}),
    input: req.messages.flatMap(itemsOf),
  };
}

function itemsOf(m: WireMessage): Record<string, unknown>[] {
  switch (m.role) {
    case "user":
      return [{ role: "user", content: [{ type: "input_text", text: m.text }] }];
    case "assistant":
      return m.parts.filter((p) => p.type === "call" || p.text !== "").map((p) =>
        p.type === "text"
          ? { type: "message", role: "assistant", content: [{ type: "output_text", text: p.text }] }
          : { type: "function_call", call_id: p.id, name: p.name, arguments: JSON.stringify(p.arguments) });
    case "tool":
      return m.results.map((r) => ({
        type: "function_call_output", call_id: r.id,
        output: r.images?.length
          ? [{ type: "input_text", text: r.text }, ...r.images.map((i) => ({ type: "input_image", image_url: `data:${i.mimeType};base64,${i.data}` }))]
          : r.text,
      }));
  }
}

/** readStream reads the streamed events of one Responses call into a reply: the output of response.completed. */
async function readStream(res: Response, req: ModelRequest): Promise<ModelReply> {
  for await (const e of events(res.body)) {
    const ev = json(e);
    const type = str(ev["type"]);
    if (type === "response.output_text.delta") req.onText?.(str(ev["delta"]));
    else if (type === "error") throw new ProviderFailure(ERROR_KINDS[str(ev["code"])] ?? "busy", str(ev["message"]) || "an error event");
    else if (type === "response.completed" || type === "response.incomplete" || type === "response.failed") {
      const response = record(ev["response"]);
      const u = record(response["usage"]);
      req.usage.input += num(u["input_tokens"]);
      req.usage.output += num(u["output_tokens"]);
      if (type === "response.failed") {
        const err = record(response["error"]);
        throw new ProviderFailure(ERROR_KINDS[str(err["code"])] ?? "busy", str(err["message"]) || "the response failed");
      }
      return replyOf(response, type === "response.incomplete");
    }
  }
  throw new ProviderFailure("unreadable", "the answer ended before response.completed");
}

function replyOf(response: Record<string, unknown>, incomplete: boolean): ModelReply {
  const parts: AssistantPart[] = [];
  let refused = false;
  for (const item of Array.isArray(response["output"]) ? response["output"].map(record) : []) {
    if (item["type"] === "function_call") {
      parts.push({ type: "call", id: str(item["call_id"]), name: str(item["name"]), arguments: parseArguments(str(item["arguments"])) as JsonObject });
    } else if (item["type"] === "message") {
      for (const c of Array.isArray(item["content"]) ? item["content"].map(record) : []) {
        if (c["type"] === "output_text") parts.push({ type: "text", text: str(c["text"]) });
        else if (c["type"] === "refusal") (refused = true), parts.push({ type: "text", text: str(c["refusal"]) });
      }
    }
  }
  const reason = str(record(response["incomplete_details"])["reason"]);
  const stop = refused || reason === "content_filter" ? "refusal" : incomplete ? "length" : parts.some((p) => p.type === "call") ? "tools" : "end";
  return { parts, stop };
}
