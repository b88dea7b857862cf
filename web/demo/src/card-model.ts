// What the view card reads from a board_picture result, without the DOM:
// the picture, and the data between the relay's data tags (the number of
// notes, the app page's address). An error result gives its words.

/** The part of an MCP tool result the card reads. */
export interface ResultLike {
  readonly content?: readonly { readonly type: string; readonly text?: string; readonly data?: string; readonly mimeType?: string }[];
  readonly isError?: boolean;
}

export interface BoardView {
  /** The PNG as a data: URL, when the result has one. */
  readonly picture?: string;
  readonly notes?: number;
  /** The app page's address: only http(s), so Open in the app opens nothing else. */
  readonly url?: string;
  /** Words to show when the result is an error, or holds no picture. */
  readonly error?: string;
}

/** The data tags the relay puts around a result's JSON (the bundle names no other). */
const DATA = /<tabrelay-data>([\s\S]*?)<\/tabrelay-data>/;

/** readResult reads a board_picture result. */
export function readResult(r: ResultLike): BoardView {
  const texts = (r.content ?? []).filter((c) => c.type === "text" && typeof c.text === "string").map((c) => c.text!);
  if (r.isError) return { error: texts.join(" ").trim() || "The board's picture could not be made." };
  const image = (r.content ?? []).find((c) => c.type === "image" && typeof c.data === "string" && /^image\/(png|jpeg|gif|webp)$/.test(c.mimeType ?? ""));
  let notes: number | undefined;
  let url: string | undefined;
  for (const t of texts) {
    const m = DATA.exec(t);
    if (!m) continue;
    try {
      const data: unknown = JSON.parse(m[1]!);
      if (typeof data === "object" && data !== null) {
        const d = data as Record<string, unknown>;
        if (typeof d["notes"] === "number") notes = d["notes"];
        if (typeof d["url"] === "string" && /^https?:\/\//i.test(d["url"])) url = d["url"];
      }
    } catch {
      // A cut or odd text: the picture alone is still worth showing.
    }
    break;
  }
  const out: { picture?: string; notes?: number; url?: string; error?: string } = {};
  if (image) out.picture = `data:${image.mimeType};base64,${image.data}`;
  else out.error = texts.slice(1).join(" ").trim() || "The answer held no picture of the board.";
  if (notes !== undefined) out.notes = notes;
  if (url !== undefined) out.url = url;
  return out;
}

/** errorText says a failed request to the host in words. */
export function errorText(err: unknown): string {
  const m = err instanceof Error ? err.message : String(err);
  return m ? `The host could not do it: ${m}` : "The host could not do it.";
}
