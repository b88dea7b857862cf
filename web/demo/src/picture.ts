// board_picture's drawing: the board's notes as cards on a canvas, as a
// PNG. layoutBoard (no DOM) places the cards; drawBoard paints them.

import type { Note } from "./notes.js";

/** The most cards a picture shows; the rest are counted in its footer. */
export const PICTURE_MAX_CARDS = 48;

export interface CardBox {
  readonly note: Note;
  readonly x: number;
  readonly y: number;
  readonly w: number;
  readonly h: number;
}

export interface Layout {
  readonly width: number;
  readonly height: number;
  readonly cards: readonly CardBox[];
  /** Notes left out of the picture. */
  readonly more: number;
}

const PAD = 12;
const HEADER = 40;
const FOOTER = 28;

/** layoutBoard places the notes' cards in columns of at least 150 px. */
export function layoutBoard(notes: readonly Note[], width: number): Layout {
  const cols = Math.max(1, Math.floor((width - PAD) / (150 + PAD)));
  const w = Math.floor((width - PAD * (cols + 1)) / cols);
  const h = 96;
  const shown = notes.slice(0, PICTURE_MAX_CARDS);
  const cards = shown.map((note, i) => ({
    note, w, h,
    x: PAD + (i % cols) * (w + PAD),
    y: HEADER + Math.floor(i / cols) * (h + PAD),
  }));
  const rows = Math.ceil(shown.length / cols);
  return { width, height: HEADER + rows * (h + PAD) + FOOTER, cards, more: notes.length - shown.length };
}

/** drawBoard paints the layout on a new canvas of the page's document. */
export function drawBoard(notes: readonly Note[], width: number, doc: Document = document): HTMLCanvasElement {
  const layout = layoutBoard(notes, width);
  const canvas = doc.createElement("canvas");
  canvas.width = layout.width;
  canvas.height = layout.height;
  const g = canvas.getContext("2d");
  if (!g) throw new Error("this browser draws no 2D canvas");
  g.fillStyle = "#f4f1ea";
  g.fillRect(0, 0, layout.width, layout.height);
  g.fillStyle = "#222";
  g.font = "bold 16px system-ui, sans-serif";
  g.textBaseline = "top";
  g.fillText(fit(g, `Notes board · ${notes.length} note${notes.length === 1 ? "" : "s"}`, layout.width - 2 * PAD), PAD, 12);
  for (const c of layout.cards) {
    g.fillStyle = c.note.saved ? "#fff4c2" : "#ffffff";
    g.strokeStyle = c.note.saved ? "#c9a400" : "#c8c2b4";
    g.lineWidth = c.note.saved ? 2 : 1;
    g.beginPath();
    g.roundRect(c.x, c.y, c.w, c.h, 6);
    g.fill();
    g.stroke();
    g.fillStyle = "#222";
    g.font = "bold 13px system-ui, sans-serif";
    g.fillText(fit(g, (c.note.saved ? "★ " : "") + c.note.title, c.w - 16), c.x + 8, c.y + 8);
    g.font = "12px system-ui, sans-serif";
    g.fillStyle = "#444";
    const lines = wrap(g, c.note.body.replace(/\s+/g, " "), c.w - 16, 3);
    lines.forEach((line, i) => g.fillText(line, c.x + 8, c.y + 28 + i * 15));
    g.fillStyle = "#6a5d3b";
    g.font = "11px system-ui, sans-serif";
    g.fillText(fit(g, c.note.tags.map((t) => "#" + t).join(" "), c.w - 16), c.x + 8, c.y + c.h - 18);
  }
  if (layout.more > 0) {
    g.fillStyle = "#444";
    g.font = "12px system-ui, sans-serif";
    g.fillText(`and ${layout.more} more`, PAD, layout.height - FOOTER + 6);
  }
  return canvas;
}

/** pngOf draws the board and returns the PNG's base64 (no data: prefix). */
export function pngOf(notes: readonly Note[], width: number, doc: Document = document): string {
  return drawBoard(notes, width, doc).toDataURL("image/png").replace(/^data:image\/png;base64,/, "");
}

function fit(g: CanvasRenderingContext2D, text: string, max: number): string {
  if (g.measureText(text).width <= max) return text;
  let s = text;
  while (s.length > 1 && g.measureText(s + "…").width > max) s = s.slice(0, -1);
  return s + "…";
}

function wrap(g: CanvasRenderingContext2D, text: string, max: number, maxLines: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(" ")) {
    const next = line ? line + " " + word : word;
    if (g.measureText(next).width <= max) {
      line = next;
      continue;
    }
    if (line) lines.push(line);
    line = word;
    if (lines.length === maxLines) break;
  }
  if (lines.length < maxLines && line) lines.push(line);
  if (lines.length === maxLines && lines.join(" ").length < text.length) lines[maxLines - 1] = fit(g, lines[maxLines - 1]! + " …", max);
  return lines.map((l) => fit(g, l, max));
}
