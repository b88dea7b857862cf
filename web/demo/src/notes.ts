// The notes board, headless: the person's notes kept in localStorage
// (seeded with a few samples on first load), what agents and the page do
// to them (list, read, add, edit, delete, search), and a generated
// read-only archive of old notes for the heavy search. No DOM: the page
// (page.ts) renders it, the handlers (handlers.ts) call it, tests drive it
// with a fake storage and clock.

/** One note of the board. Times are ISO 8601 strings (what agents read). */
export interface Note {
  readonly id: string;
  readonly title: string;
  readonly body: string;
  readonly tags: readonly string[];
  readonly saved: boolean;
  readonly created: string;
  readonly updated: string;
}

/** What a list shows of a note. */
export interface Summary {
  readonly id: string;
  readonly title: string;
  readonly tags: readonly string[];
  readonly saved: boolean;
  readonly updated: string;
}

/** The part of localStorage the board uses. */
export interface NotesStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

/** The storage key of the first board's notes; every key of the demo starts with `tabrelay-demo:`. */
export const NOTES_KEY = "tabrelay-demo:notes";

/** The boards the page can show: each is a document with its own notes, data switch and notice. */
export const BOARDS = [{ id: "main", title: "My notes" }, { id: "work", title: "Work" }] as const;
export type BoardId = (typeof BOARDS)[number]["id"];

/** notesKey is the storage key of a board's notes (the first board keeps the key it always had). */
export function notesKey(board: string): string {
  return board === BOARDS[0].id ? NOTES_KEY : `${NOTES_KEY}:${board}`;
}

/** Limits on what a note holds, so that a note always fits a result and the storage. */
export const LIMITS = { title: 200, body: 20_000, tags: 12, tag: 40, notes: 1_000 } as const;

/** NoteError is a mistake in what was asked (an unknown id, a title too long): its message is a sentence for whoever asked. */
export class NoteError extends Error {
  override name = "NoteError";
}

/** What a new note may say. */
export interface NewNote {
  readonly title: string;
  readonly body?: string | undefined;
  readonly tags?: readonly string[] | undefined;
  readonly saved?: boolean | undefined;
}

/** What an edit may change; fields left out stay. */
export interface NotePatch {
  readonly title?: string | undefined;
  readonly body?: string | undefined;
  readonly tags?: readonly string[] | undefined;
  readonly saved?: boolean | undefined;
}

/** What list_notes and the page's list filter by. */
export interface ListQuery {
  readonly query?: string | undefined;
  readonly tag?: string | undefined;
  readonly saved?: boolean | undefined;
  readonly limit?: number | undefined;
}

export interface BoardOptions {
  /** null: the notes live for the page only (a browser that keeps no site data). */
  storage: NotesStorage | null;
  /** Unix ms. */
  now?: () => number;
  /** A fresh note id. */
  newId?: () => string;
  /** The board shown first; the first of BOARDS when left out. */
  board?: BoardId | undefined;
}

/**
 * Board holds the person's notes. Every change is written to the storage
 * at once; reload() reads what another tab wrote (the page calls it on the
 * `storage` event). Listeners hear every change, this tab's or another's.
 */
export class Board {
  private notes: Note[] = [];
  private readonly listeners = new Set<() => void>();
  private readonly now: () => number;
  private readonly newId: () => string;
  /** The storage refused a write: the notes hold for this page only. */
  storageFailed = false;
  private boardId: BoardId;
  /** Each board's notes as last written, which a page without storage reads back. */
  private readonly pageNotes = new Map<string, Note[]>();

  constructor(private readonly options: BoardOptions) {
    this.now = options.now ?? Date.now;
    this.newId = options.newId ?? randomId;
    this.boardId = options.board ?? BOARDS[0].id;
    this.reload();
  }

  /** The board shown. */
  get board(): (typeof BOARDS)[number] {
    return BOARDS.find((b) => b.id === this.boardId)!;
  }

  /** The storage key of the board shown: the page reloads on its storage events. */
  get key(): string {
    return notesKey(this.boardId);
  }

  /** open shows another board: its notes from now on. */
  open(board: BoardId): void {
    if (board === this.boardId || !BOARDS.some((b) => b.id === board)) return;
    this.boardId = board;
    this.reload();
  }

  /** reload reads the notes from the storage; with none stored yet, it seeds the samples (the first board) or starts empty. */
  reload(): void {
    const raw = this.read();
    if (raw === undefined) {
      this.notes = this.boardId === BOARDS[0].id ? sampleNotes(this.now()) : [];
      this.write();
    } else {
      this.notes = raw;
    }
    this.notify();
  }

  /** onChange calls listener after every change; it returns the unsubscribe. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** all is every note, the last updated first. */
  get all(): readonly Note[] {
    return [...this.notes].sort(byUpdated);
  }

  /** tags is every tag in use, sorted. */
  get tags(): readonly string[] {
    return [...new Set(this.notes.flatMap((n) => n.tags))].sort();
  }

  /** list returns the notes a query picks, the last updated first. */
  list(q: ListQuery = {}): Note[] {
    const words = wordsOf(q.query ?? "");
    const tag = q.tag === undefined ? undefined : normalTag(q.tag);
    const picked = this.notes.filter((n) =>
      (tag === undefined || n.tags.includes(tag)) && (q.saved === undefined || n.saved === q.saved) && countMatches(n, words) >= words.length);
    return picked.sort(byUpdated).slice(0, q.limit ?? picked.length);
  }

  /** get returns the note with id, from the board or the archive; undefined when there is none. */
  get(id: string): Note | undefined {
    return this.notes.find((n) => n.id === id) ?? archiveNote(id);
  }

  /** add makes a note and returns it. */
  add(fields: NewNote): Note {
    if (this.notes.length >= LIMITS.notes) throw new NoteError(`The board holds at most ${LIMITS.notes} notes; delete some first.`);
    const at = new Date(this.now()).toISOString();
    const note: Note = {
      id: this.freshId(), title: checkTitle(fields.title), body: checkBody(fields.body ?? ""),
      tags: checkTags(fields.tags ?? []), saved: fields.saved === true, created: at, updated: at,
    };
    this.notes.push(note);
    this.changed();
    return note;
  }

  /** edit changes the fields patch names and returns the note as it is now. */
  edit(id: string, patch: NotePatch): Note {
    const i = this.indexOf(id);
    const old = this.notes[i]!;
    const note: Note = {
      ...old,
      title: patch.title === undefined ? old.title : checkTitle(patch.title),
      body: patch.body === undefined ? old.body : checkBody(patch.body),
      tags: patch.tags === undefined ? old.tags : checkTags(patch.tags),
      saved: patch.saved ?? old.saved,
      updated: new Date(this.now()).toISOString(),
    };
    this.notes[i] = note;
    this.changed();
    return note;
  }

  /** remove deletes a note and returns it. */
  remove(id: string): Note {
    const i = this.indexOf(id);
    const [note] = this.notes.splice(i, 1);
    this.changed();
    return note!;
  }

  /**
   * restore puts the note id back as it was before a change: note, or no
   * note (one that was added). It is how Undo turn takes an agent's steps back.
   */
  restore(id: string, note: Note | undefined): void {
    const i = this.notes.findIndex((n) => n.id === id);
    if (note && i >= 0) this.notes[i] = note;
    else if (note) this.notes.push(note);
    else if (i >= 0) this.notes.splice(i, 1);
    this.changed();
  }

  private indexOf(id: string): number {
    const i = this.notes.findIndex((n) => n.id === id);
    if (i >= 0) return i;
    if (archiveNote(id)) throw new NoteError(`The note ${JSON.stringify(id)} is in the archive, which is read-only.`);
    throw new NoteError(`There is no note with the id ${JSON.stringify(id)}; list_notes gives the ids.`);
  }

  private freshId(): string {
    for (;;) {
      const id = this.newId();
      if (!this.notes.some((n) => n.id === id) && !archiveNote(id)) return id;
    }
  }

  private changed(): void {
    this.write();
    this.notify();
  }

  private notify(): void {
    for (const l of [...this.listeners]) l();
  }

  private read(): Note[] | undefined {
    let raw: string | null = null;
    try {
      raw = this.options.storage?.getItem(this.key) ?? null;
    } catch {
      // A storage that refuses reads holds nothing we can use.
    }
    if (raw === null) return this.options.storage ? undefined : this.pageNotes.get(this.boardId);
    try {
      const parsed: unknown = JSON.parse(raw);
      if (Array.isArray(parsed)) return parsed.filter(isNote);
    } catch {
      // Not JSON: start over with the samples rather than fail the page.
    }
    return undefined;
  }

  private write(): void {
    this.pageNotes.set(this.boardId, this.notes);
    try {
      this.options.storage?.setItem(this.key, JSON.stringify(this.notes));
      this.storageFailed = false;
    } catch {
      this.storageFailed = true;
    }
  }
}

function byUpdated(a: Note, b: Note): number {
  return a.updated < b.updated ? 1 : a.updated > b.updated ? -1 : a.id < b.id ? -1 : 1;
}

/** summaryOf is what a list shows of a note. */
export function summaryOf(n: Note): Summary {
  return { id: n.id, title: n.title, tags: n.tags, saved: n.saved, updated: n.updated };
}

function isNote(v: unknown): v is Note {
  if (typeof v !== "object" || v === null) return false;
  const n = v as Record<string, unknown>;
  return typeof n["id"] === "string" && typeof n["title"] === "string" && typeof n["body"] === "string" &&
    Array.isArray(n["tags"]) && n["tags"].every((t) => typeof t === "string") && typeof n["saved"] === "boolean" &&
    typeof n["created"] === "string" && typeof n["updated"] === "string";
}

function checkTitle(title: unknown): string {
  if (typeof title !== "string" || !title.trim()) throw new NoteError("A note needs a title (a non-empty string).");
  if (title.length > LIMITS.title) throw new NoteError(`A title has at most ${LIMITS.title} characters; this one has ${title.length}.`);
  return title.trim();
}

function checkBody(body: unknown): string {
  if (typeof body !== "string") throw new NoteError("A note's body is a string.");
  if (body.length > LIMITS.body) throw new NoteError(`A body has at most ${LIMITS.body} characters; this one has ${body.length}.`);
  return body;
}

/** checkTags returns the tags lowercased, trimmed and without repeats. */
function checkTags(tags: unknown): string[] {
  if (!Array.isArray(tags) || !tags.every((t) => typeof t === "string")) throw new NoteError("Tags are a list of strings.");
  const out = [...new Set(tags.map(normalTag).filter((t) => t !== ""))];
  if (out.length > LIMITS.tags) throw new NoteError(`A note has at most ${LIMITS.tags} tags; this one has ${out.length}.`);
  const long = out.find((t) => t.length > LIMITS.tag);
  if (long !== undefined) throw new NoteError(`A tag has at most ${LIMITS.tag} characters: ${JSON.stringify(long.slice(0, 50))} is longer.`);
  return out;
}

/** normalTag is a tag as the board keeps it: trimmed, lowercase, without a leading #. */
export function normalTag(tag: string): string {
  return tag.trim().replace(/^#/, "").toLowerCase();
}

/** wordsOf splits a search into its lowercase words. */
export function wordsOf(query: string): string[] {
  return query.toLowerCase().split(/\s+/).filter((w) => w !== "");
}

/**
 * countMatches counts the words of a search that a note holds (in its
 * title, body or tags, in any case); a note matches a search when it holds
 * every word.
 */
export function countMatches(n: Note, words: readonly string[]): number {
  if (!words.length) return 0;
  const text = (n.title + "\n" + n.body + "\n" + n.tags.join(" ")).toLowerCase();
  return words.filter((w) => text.includes(w)).length;
}

/** occurrences counts how often the words of a search occur in a note: the `matches` of a search result. */
export function occurrences(n: Note, words: readonly string[]): number {
  const text = (n.title + "\n" + n.body + "\n" + n.tags.join(" ")).toLowerCase();
  let count = 0;
  for (const w of words) for (let i = text.indexOf(w); i >= 0; i = text.indexOf(w, i + w.length)) count++;
  return count;
}

function randomId(): string {
  const bytes = new Uint8Array(6);
  crypto.getRandomValues(bytes);
  return "n-" + [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** sampleNotes are the notes a new board starts with. */
export function sampleNotes(now: number): Note[] {
  const day = 86_400_000;
  const samples: [string, string, string[], boolean][] = [
    ["Welcome to the Notes board", "Add, edit, save and delete notes here. An agent you connect can do the same through its tools, and you decide what it may do (Permissions, below).", ["help"], true],
    ["Groceries", "Oat milk, lemons, rye bread, coffee beans, basil.", ["home", "shopping"], false],
    ["Trip to Lisbon", "Flights booked for the 14th. Ask about the tram 28 pass; book the Sintra day trip.", ["travel"], true],
    ["Book club: next pick", "Candidates: The Dispossessed, Piranesi, A Memory Called Empire.", ["books", "friends"], false],
    ["Release checklist", "Tag the build, update the changelog, run the live check, announce in #releases.", ["work"], true],
    ["Ideas for the garden", "Move the rosemary to the sunny corner. Try tomatoes in pots this year.", ["home", "garden"], false],
    ["Meeting notes: planning", "Decided: ship the notes demo first. Open question: how big may the view card be?", ["work", "meetings"], false],
    ["Recipe: lentil soup", "Red lentils, onion, carrot, cumin, stock; 25 minutes; lemon at the end.", ["recipes", "home"], false],
  ];
  return samples.map(([title, body, tags, saved], i) => {
    const at = new Date(now - (samples.length - i) * day).toISOString();
    return { id: `n-sample-${i + 1}`, title, body, tags, saved, created: at, updated: at };
  });
}

// The archive: old notes generated from a seed, the same in every tab and
// every build, read-only. It stands for a big store a search takes long
// over (search_notes with thorough).

/** The archive's size. */
export const ARCHIVE_SIZE = 3_000;
const ARCHIVE_EPOCH = Date.UTC(2019, 0, 1);
const TOPICS = ["budget", "garden", "meeting", "travel", "recipe", "invoice", "birthday", "project", "reading", "repair", "school", "health"];
const WORDS = ["plan", "call", "draft", "review", "order", "fix", "visit", "notes", "list", "follow-up", "idea", "summary", "question", "update"];
const PLACES = ["Berlin", "Porto", "the office", "home", "the library", "Kyoto", "the bank", "the garage", "Oslo", "the school"];

/** archiveNote returns the archive's note with id ("a-0001" … "a-3000"), or undefined. */
export function archiveNote(id: string): Note | undefined {
  const m = /^a-(\d{4})$/.exec(id);
  if (!m) return undefined;
  const i = Number(m[1]);
  if (i < 1 || i > ARCHIVE_SIZE) return undefined;
  let seed = i * 2_654_435_761;
  const pick = <T>(xs: readonly T[]): T => {
    seed = (Math.imul(seed ^ (seed >>> 15), 2_246_822_519) + 0x9e3779b9) >>> 0;
    return xs[seed % xs.length]!;
  };
  const topic = pick(TOPICS);
  const word = pick(WORDS);
  const place = pick(PLACES);
  const other = pick(TOPICS);
  const at = new Date(ARCHIVE_EPOCH + i * 43_200_000).toISOString();
  return {
    id, title: `${cap(topic)} ${word} (${i})`,
    body: `Old note about the ${topic} ${word} at ${place}. See also the ${other} notes.`,
    tags: ["archive", topic], saved: false, created: at, updated: at,
  };
}

function cap(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** archiveIds lists the archive's ids in order. */
export function archiveIds(): string[] {
  return Array.from({ length: ARCHIVE_SIZE }, (_, i) => `a-${String(i + 1).padStart(4, "0")}`);
}
