// The view card (ui://notes/board): an MCP App the host draws beside
// board_picture's results. It shows the picture from the result it
// receives, Refresh (board_picture again, through the host) and Open in
// the app (the host opens the page's address). Built into one
// self-contained HTML document, dist/card.html (scripts/build.mjs). It
// speaks MCP Apps through view-bridge.ts.

import { errorText, readResult, type ResultLike } from "./card-model.js";
import { View } from "./view-bridge.js";

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const picture = $<HTMLImageElement>("picture");
const status = $<HTMLElement>("status");
const error = $<HTMLElement>("error");
const refresh = $<HTMLButtonElement>("refresh");
const open = $<HTMLButtonElement>("open");
let url: string | undefined;

const app = new View({ name: "notes-board-card", version: "1.0.0" });

function show(result: ResultLike): void {
  const view = readResult(result);
  error.textContent = view.error ?? "";
  if (view.picture) {
    picture.src = view.picture;
    picture.alt = `The Notes board${view.notes === undefined ? "" : ` with ${view.notes} note${view.notes === 1 ? "" : "s"}`}, drawn as cards.`;
    picture.hidden = false;
    status.textContent = view.notes === undefined ? "The board's picture." : `The board has ${view.notes} note${view.notes === 1 ? "" : "s"}.`;
  } else if (view.error) status.textContent = picture.hidden ? "" : "The picture below is the last one the tab drew.";
  if (view.url) url = view.url;
  open.disabled = url === undefined;
}

app.ontoolresult = (result) => show(result as ResultLike);
app.onhostcontextchanged = (ctx) => {
  if (ctx.theme) document.documentElement.dataset["theme"] = ctx.theme;
};

refresh.addEventListener("click", async () => {
  refresh.disabled = true;
  status.textContent = "Asking the tab for a new picture…";
  try {
    const width = Math.max(64, Math.min(1024, Math.round(document.documentElement.clientWidth || 640)));
    show((await app.callServerTool({ name: "board_picture", arguments: { width } })) as ResultLike);
  } catch (err) {
    error.textContent = errorText(err);
    status.textContent = "";
  } finally {
    refresh.disabled = false;
  }
});

open.addEventListener("click", async () => {
  if (!url) return;
  try {
    const r = await app.openLink({ url });
    error.textContent = r.isError ? `The host did not open ${url}: open it yourself.` : "";
  } catch (err) {
    error.textContent = errorText(err);
  }
});

/** fitToContent tells the host the card's size now and at every change (as the package's App does). */
function fitToContent(): void {
  let sent = "";
  const measure = () => {
    const root = document.documentElement;
    const height = root.style.height;
    root.style.height = "max-content";
    const size = { width: Math.ceil(window.innerWidth), height: Math.ceil(root.getBoundingClientRect().height) };
    root.style.height = height;
    const key = `${size.width}x${size.height}`;
    if (key === sent) return;
    sent = key;
    app.sendSizeChanged(size);
  };
  const observer = new ResizeObserver(() => requestAnimationFrame(measure));
  observer.observe(document.documentElement);
  observer.observe(document.body);
}

app.connect().then(
  (context) => {
    if (context.theme) document.documentElement.dataset["theme"] = context.theme;
    fitToContent();
  },
  (err: unknown) => (error.textContent = "This card could not reach its host: " + errorText(err)),
);
