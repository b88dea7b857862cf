// What agents are sent of the data (seed 000 "What agents are sent of the
// data"), headless: the document shown, its switch "Agents see names and
// summaries only" and its one-time notice, kept per document identity in
// localStorage `<prefix>:data:<app name>` (other tabs follow through
// storage events; a document without an identity, or a browser that keeps
// no site data, keeps them for the page only); the groups an agent shaped;
// and what the switch refuses and strips. Permissions (permissions-model.ts)
// holds one and applies it to every call.

import type { DataScope as ToolDataScope, SentCall, StorageLike, TabResult, ToolDeclaration } from "../index.js";
import { refusal as refusalOf, withNote } from "../index.js";
import { isRecord } from "../protocol.js";

/** The document (dataset, board, file) an app shows: id is its identity across pages; without one it lasts for the page. */
export interface AgentDocument {
  readonly id?: string;
  readonly name: string;
}

interface DocumentState {
  summariesOnly?: boolean;
  noticed?: boolean;
}

/**
 * The SDK's own sentences an agent reads about the data switch: notes, which
 * the relay writes after the data tag (refusal and withNote, notes.ts). They
 * quote no names written by others, so they carry none.
 */
export const DATA_SENTENCES = {
  cells: "The person set the document shown in this tab so that agents see names and summaries only; this tool reads cell-level data, so it was not run.",
  unclassified: "The person set the document shown in this tab so that agents see names and summaries only; this tool's result is not classified as summaries, so it was not run.",
  shaped: "The person set the document shown in this tab so that agents see names and summaries only; this tool would summarise a group an agent made by naming single cells, so it was not run.",
  pictures: "pictures",
  sounds: "sound clips",
  singleCell: (fields: string) => `single-cell values (${fields}: each one cell's own value)`,
  leftOut: (what: string) => `The person lets agents see names and summaries only of the document shown, so this result was sent without its ${what}.`,
} as const;

/** The key of the page's document without an identity. */
const PAGE = "";

export class DocumentScopes {
  private doc: AgentDocument = { name: "" };
  /** Each document's state kept for the page: without an identity, or where storage failed. */
  private readonly page = new Map<string, DocumentState>();
  private stored: Record<string, DocumentState>;
  /** Documents an agent acted on in this page. */
  private readonly acted = new Set<string>();
  /** Groups agents shaped, per document, for the page only. */
  private readonly shapedGroups = new Map<string, Set<string>>();

  constructor(
    private readonly storage: StorageLike | null,
    readonly key: string,
    /** The switch an older version kept for the whole app: the default of documents with none of their own. */
    private readonly legacyOn: () => boolean,
  ) {
    this.stored = this.load();
  }

  get document(): AgentDocument {
    return this.doc;
  }

  /** show makes doc the document shown; it says whether that is another document. */
  show(doc: AgentDocument | null): boolean {
    const next = { ...(doc?.id ? { id: String(doc.id) } : {}), name: String(doc?.name ?? "") };
    const other = keyOf(next) !== keyOf(this.doc) || (!next.id && next.name !== this.doc.name);
    this.doc = next;
    return other;
  }

  /** The switch of the document shown, or of the document whose key is given. */
  summariesOnly(key = keyOf(this.doc)): boolean {
    return this.state(key).summariesOnly ?? this.legacyOn();
  }

  setSummariesOnly(on: boolean): void {
    this.write({ summariesOnly: on });
  }

  /** The notice is due when an agent acted on the document shown in this page and the person has not said Got it. */
  get noticeDue(): boolean {
    const key = keyOf(this.doc);
    return this.acted.has(key) && !this.state(key).noticed;
  }

  /** act records that an agent acts on the document shown; true when the notice became due. */
  act(): boolean {
    const key = keyOf(this.doc);
    if (this.acted.has(key)) return false;
    this.acted.add(key);
    return this.noticeDue;
  }

  gotIt(): void {
    this.write({ noticed: true });
  }

  /** markShaped records that an agent shaped a group of the document shown by naming cells. */
  markShaped(group: string): void {
    const key = keyOf(this.doc);
    const set = this.shapedGroups.get(key) ?? new Set();
    this.shapedGroups.set(key, set.add(String(group)));
  }

  /** refusal returns the sentence refusing a call while the switch is on, or undefined when it may run. */
  refusal(tool: ToolDeclaration, args: Readonly<Record<string, unknown>>): string | undefined {
    if (tool.result === undefined) return DATA_SENTENCES.unclassified;
    if (tool.result === "cells") return DATA_SENTENCES.cells;
    const shaped = this.shapedGroups.get(keyOf(this.doc));
    const named = (tool.dataScope?.groups ?? []).flatMap((a) => [args[a]].flat());
    return shaped && named.some((g) => typeof g === "string" && shaped.has(g)) ? DATA_SENTENCES.shaped : undefined;
  }

  /**
   * sending is what goes out of a call's result: unchanged while the
   * switch is off for both the document the call started on and the one
   * shown; else refused, or without pictures and single-cell values.
   */
  sending(call: SentCall, result: TabResult, startedOn: string | undefined): TabResult {
    if (!this.summariesOnly() && !(startedOn !== undefined && this.summariesOnly(startedOn))) return result;
    const refusal = this.refusal(call.tool, call.arguments);
    if (refusal) return result.notes?.[0]?.text === refusal ? result : refusalOf(refusal);
    return strip(result, call.tool.dataScope);
  }

  /** reload reads what another tab wrote; it says whether anything changed. */
  reload(): boolean {
    const before = JSON.stringify(this.stored);
    this.stored = this.load();
    return JSON.stringify(this.stored) !== before;
  }

  /** The documents whose switch is on (keys): the shown one, and those this page or the storage holds a state of. */
  onKeys(): string[] {
    return [...new Set([keyOf(this.doc), ...Object.keys(this.stored), ...this.page.keys()])].filter((k) => this.summariesOnly(k));
  }

  /** The key of the document shown, for sending's startedOn. */
  get shownKey(): string {
    return keyOf(this.doc);
  }

  private state(key: string): DocumentState {
    return { ...this.stored[key], ...this.page.get(key) };
  }

  /** write merges change into what is stored for the document shown (another tab may have written since); for the page where it cannot. */
  private write(change: DocumentState): void {
    const key = keyOf(this.doc);
    if (key !== PAGE && this.storage) {
      const all = this.load();
      all[key] = { ...all[key], ...change };
      try {
        this.storage.setItem(this.key, JSON.stringify(all));
        this.stored = all;
        this.page.delete(key);
        return;
      } catch {
        // A full or refusing storage: for the page.
      }
    }
    this.page.set(key, { ...this.page.get(key), ...change });
  }

  private load(): Record<string, DocumentState> {
    try {
      const v: unknown = JSON.parse(this.storage?.getItem(this.key) ?? "{}");
      const all: Record<string, DocumentState> = {};
      // Only what this code writes counts: a field of another type (a hand edit, another version) reads as unset.
      for (const [key, d] of Object.entries(isRecord(v) ? v : {})) {
        if (!isRecord(d)) continue;
        const state: DocumentState = (all[key] = {});
        if (typeof d["summariesOnly"] === "boolean") state.summariesOnly = d["summariesOnly"];
        if (typeof d["noticed"] === "boolean") state.noticed = d["noticed"];
      }
      return all;
    } catch {
      return {};
    }
  }
}

function keyOf(doc: AgentDocument): string {
  return doc.id ? "id:" + doc.id : PAGE;
}

/**
 * strip returns result without its pictures, sound clips and single-cell
 * values, saying what was left out. A resource goes as a picture when its
 * type says image/*, and when it is bytes of no type said (it may be one);
 * a sound clip is the data's as a picture is.
 */
function strip(result: TabResult, scope: ToolDataScope | undefined): TabResult {
  const out: TabResult = { ...result };
  let pictures = !!out.images?.length;
  delete out.images;
  const sounds = !!out.audio?.length;
  delete out.audio;
  const kept = out.resources?.filter((r) => !/^image\//i.test(r.mimeType ?? "") && !(r.blob !== undefined && !r.mimeType));
  if (kept && kept.length < out.resources!.length) (pictures = true), (out.resources = kept);
  const cut: string[] = [];
  for (const [fields, isPicture] of [[scope?.pictures, true], [scope?.singleCell, false]] as const) {
    for (const field of fields ?? []) {
      const [data, hit] = without(out.data, field.split("."));
      if (!hit) continue;
      out.data = data;
      if (isPicture) pictures = true;
      else cut.push(field);
    }
  }
  const what = [
    ...(pictures ? [DATA_SENTENCES.pictures] : []), ...(sounds ? [DATA_SENTENCES.sounds] : []),
    ...(cut.length ? [DATA_SENTENCES.singleCell(cut.join(", "))] : []),
  ];
  return what.length ? withNote(out, DATA_SENTENCES.leftOut(listed(what))) : out;
}

/** listed joins items as a sentence lists them: "a", "a and b", "a, b and c". */
export function listed(items: readonly string[]): string {
  return items.length <= 2 ? items.join(" and ") : `${items.slice(0, -1).join(", ")} and ${items.at(-1)}`;
}

/** without returns v without the field at path ("*" for every item or value), and whether there was one. */
function without(v: unknown, path: readonly string[]): [unknown, boolean] {
  const [head, ...rest] = path;
  if (head === undefined || !(Array.isArray(v) || isRecord(v))) return [v, false];
  const copy: Record<string, unknown> = Array.isArray(v) ? { ...v } : { ...v };
  const keys = head === "*" ? Object.keys(copy) : Object.hasOwn(copy, head) ? [head] : [];
  let hit = false;
  for (const k of keys) {
    if (rest.length === 0) {
      delete copy[k];
      hit = true;
      continue;
    }
    const [inner, cut] = without(copy[k], rest);
    if (cut) (copy[k] = inner), (hit = true);
  }
  if (!hit) return [v, false];
  return [Array.isArray(v) ? Object.keys(copy).map((k) => copy[k]) : copy, true];
}
