// The chat's tool results between the data tags, as the relay writes them
// (protocol/content.go EncodeResult, SPEC §4, §10): the result's JSON
// compacted, '<' written as \u003c, between <tag> and </tag>; a failure
// as {"error": …, "data": …}; the app's notes after the closing tag, names
// marked (protocol/notes.go); the text held to 150,000 characters with the
// same sentence when cut. test/recorded/encoding.json holds cases both
// encoders are checked against (protocol/encoding_agreement_test.go and
// test/chat-encode.test.ts). A chat sends text and pictures: sound clips
// and embedded resources are left out, with a sentence the model reads.

import type { Media, Note, TabResult } from "../protocol.js";

export const DEFAULT_DATA_TAG = "tabrelay-data";
/** The most characters (code points) a result's text may have, tags and sentences included. */
export const RESULT_TEXT_CHARS = 150_000;
const IMAGE_MAX_BASE64 = 10 << 20;
const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];

export interface Encoded {
  readonly text: string;
  readonly isError: boolean;
  readonly images: readonly Media[];
}

/** validDataTag is protocol.ValidDataTag: a lower-case letter, then at most 39 lower-case letters, digits or hyphens. */
export function validDataTag(tag: string): boolean {
  return /^[a-z][a-z0-9-]{0,39}$/.test(tag);
}

/** escapeJSON is the value's JSON, compact, with '<' as \u003c (it cannot end a tag). */
export function escapeJSON(value: unknown): string {
  if (value === undefined) return "null";
  return (JSON.stringify(value) ?? "null").replace(/</g, "\\u003c");
}

/** encodeResult returns what a model reads of a tool's result. */
export function encodeResult(tag: string, r: TabResult): Encoded {
  if (!validDataTag(tag)) tag = DEFAULT_DATA_TAG;
  const said = noteSentences(tag, r.notes ?? []);
  let inner = escapeJSON(r.data);
  if (r.error !== undefined) inner = `{"error":${escapeJSON(String(r.error))}${r.data !== undefined ? `,"data":${inner}` : ""}}`;
  const images: Media[] = [];
  (r.images ?? []).forEach((img, i) => {
    const type = String(img.mimeType).trim().toLowerCase();
    if (IMAGE_TYPES.includes(type) && typeof img.data === "string" && img.data.length <= IMAGE_MAX_BASE64 && /^[A-Za-z0-9+/]*={0,2}$/.test(img.data)) {
      images.push({ mimeType: type, data: img.data });
    } else said.push(`Picture ${i + 1} was left out: it is not a PNG, JPEG, GIF or WebP picture of at most 10 MiB in base64.`);
  });
  if (r.audio?.length) said.push(`${count(r.audio.length)} sound ${r.audio.length === 1 ? "clip was" : "clips were"} left out: this chat sends text and pictures only.`);
  if (r.resources?.length) said.push(`${count(r.resources.length)} embedded ${r.resources.length === 1 ? "resource was" : "resources were"} left out: this chat sends text and pictures only.`);
  return { text: fitText(tag, inner, said), isError: r.error !== undefined || r.isError === true, images };
}

/** noteSentences is protocol.noteSentences: the notes as sentences, then one for each note left out. */
function noteSentences(tag: string, notes: readonly Note[]): string[] {
  const written: string[] = [], left: string[] = [];
  notes.forEach((n, i) => {
    const more = notes.length - 8;
    if (i === 8) left.push(`${count(more)} more ${more === 1 ? "note of the app was" : "notes of the app were"} left out: a result carries at most 8.`);
    if (i >= 8) return;
    const s = noteSentence(tag, n);
    if (s === undefined) left.push(`Note ${i + 1} of the app was left out: a note has at most 1,000 characters and 8 names of at most 300 characters each, and each {n} in it names one of them.`);
    else if (s) written.push(s);
  });
  return [...written, ...left];
}

/** noteSentence is protocol.noteSentence: each {n} the name marked as data, each '<' escaped; undefined over the limits. */
function noteSentence(tag: string, n: Note): string | undefined {
  const names = n.names ?? [];
  if (runes(n.text) > 1000 || names.length > 8 || names.some((x) => runes(x) > 300)) return undefined;
  let bad = false;
  const s = n.text.trim().replace(/\{(\d)\}|</g, (m, d?: string) => {
    if (m === "<") return "\\u003c";
    const name = names[Number(d)];
    if (name === undefined) bad = true;
    return `<${tag}>${escapeJSON(name ?? "").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029")}</${tag}>`;
  });
  return bad ? undefined : s;
}

/** fitText is protocol.fitTexts for one text: tagged, the sentences after, cut to RESULT_TEXT_CHARS. */
function fitText(tag: string, inner: string, said: readonly string[]): string {
  const open = `<${tag}>`, end = `</${tag}>`;
  const tail = said.length ? "\n\n" + said.join("\n\n") : "";
  const dataRunes = runes(inner);
  const fixed = open.length + end.length + runes(tail);
  if (fixed + dataRunes <= RESULT_TEXT_CHARS) return open + inner + end + tail;
  const longest = "\n\n" + cutSentence(dataRunes, dataRunes);
  const [at, kept] = cutPoint(inner, Math.max(RESULT_TEXT_CHARS - fixed - runes(longest), 0));
  return open + inner.slice(0, at) + end + tail + "\n\n" + cutSentence(dataRunes, kept);
}

function cutSentence(total: number, kept: number): string {
  return `The result was cut: its data has ${count(total)} characters; the first ${count(kept)} are shown.`;
}

/** cutPoint returns where to cut s (UTF-16 offset) to keep at most n code points, never inside an escape, and how many are kept. */
function cutPoint(s: string, n: number): [number, number] {
  let count = 0, pending = 0, offset = 0, kept = 0, i = 0;
  for (const ch of s) {
    if (pending === 0) (offset = i), (kept = count);
    if (count === n) return [offset, kept];
    count++;
    if (pending > 0) pending--;
    else if (ch === "\\") pending = s[i + 1] === "u" ? 5 : 1;
    i += ch.length;
  }
  return pending === 0 ? [s.length, count] : [offset, kept];
}

function runes(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** count writes n with commas between thousands, as the relay does. */
function count(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}
