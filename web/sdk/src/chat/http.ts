// What the HTTP providers share: the base URL, a POST or GET that maps every
// failure to a kind (contract.ts), and the server-sent events of a
// streamed answer.

import type { FailureKind } from "../chat-messages.js";
import { isRecord, parseJSON } from "../protocol.js";
import { ProviderFailure } from "./contract.js";

/** baseOf checks a base URL (http or https, no credentials, no query) and returns it without a trailing slash. */
export function baseOf(raw: string): { base: string; origin: string } {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new TypeError(`tabrelay chat: the base URL ${JSON.stringify(raw)} is not a URL`);
  }
  if ((url.protocol !== "https:" && url.protocol !== "http:") || url.username || url.password || url.search || url.hash) {
    throw new TypeError(`tabrelay chat: the base URL ${JSON.stringify(raw)} must be http(s), without credentials, query or fragment`);
  }
  return { base: url.href.replace(/\/+$/, ""), origin: url.origin };
}

/** The provider-specific reading of an error body: its kind, if the body says, and its message. */
export type ErrorReader = (status: number, body: unknown) => { kind?: FailureKind | undefined; message?: string | undefined };

/** kindOfStatus maps an HTTP status to a kind when the body says none. */
export function kindOfStatus(status: number): FailureKind {
  if (status === 401) return "auth";
  if (status === 403) return "permission";
  if (status === 402) return "quota";
  if (status === 404) return "model";
  if (status === 413) return "too-long";
  if (status === 429) return "rate";
  if (status === 408 || status >= 500) return "busy";
  return "request";
}

/** request sends one HTTP request and returns the response, or throws a ProviderFailure. */
export async function request(
  fetcher: typeof fetch, url: string, init: { method: string; headers: Record<string, string>; body?: string; signal: AbortSignal },
  readError: ErrorReader,
): Promise<Response> {
  let res: Response;
  try {
    res = await fetcher(url, { ...init, credentials: "omit", redirect: "error", referrerPolicy: "no-referrer" });
  } catch (err) {
    if (init.signal.aborted) throw init.signal.reason;
    throw new ProviderFailure("network", err instanceof Error ? err.message : String(err));
  }
  if (res.ok) return res;
  const text = await res.text().catch(() => "");
  const body = parseJSON(text);
  const said = readError(res.status, body);
  const after = retryAfter(res.headers.get("retry-after"));
  throw new ProviderFailure(said.kind ?? kindOfStatus(res.status), said.message || `HTTP ${res.status}`, after);
}

function retryAfter(v: string | null): number | undefined {
  if (!v) return undefined;
  const s = Number(v);
  if (Number.isFinite(s) && s >= 0) return s * 1000;
  const at = Date.parse(v);
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : undefined;
}

/** One server-sent event: its name and its data lines joined. */
export interface ServerEvent {
  readonly event: string;
  readonly data: string;
}

/** events reads a text/event-stream body into events (the WHATWG event stream format, without id and retry). */
export async function* events(body: ReadableStream<Uint8Array> | null): AsyncGenerator<ServerEvent> {
  if (!body) throw new ProviderFailure("unreadable", "the answer has no body");
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let event = "", data: string[] = [];
  for (;;) {
    const { value, done } = await reader.read();
    buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
    let nl: number;
    while ((nl = buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + (buffer.startsWith("\r\n", nl) ? 2 : 1));
      if (line === "") {
        if (data.length) yield { event: event || "message", data: data.join("\n") };
        event = "";
        data = [];
      } else if (!line.startsWith(":")) {
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const v = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") event = v;
        else if (field === "data") data.push(v);
      }
    }
    if (done) break;
  }
  if (data.length) yield { event: event || "message", data: data.join("\n") };
}

/** json parses one event's data, or throws an unreadable failure. */
export function json(e: ServerEvent): Record<string, unknown> {
  const v = parseJSON(e.data);
  if (isRecord(v)) return v;
  throw new ProviderFailure("unreadable", `an event ${e.event} that is not a JSON object`);
}

/** parseArguments reads a tool call's arguments (JSON text) as an object, or throws unreadable. */
export function parseArguments(text: string): Record<string, unknown> {
  if (text.trim() === "") return {};
  const v = parseJSON(text);
  if (isRecord(v)) return v;
  throw new ProviderFailure("unreadable", "a tool call whose arguments are not a JSON object");
}
