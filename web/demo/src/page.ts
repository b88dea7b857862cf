// The Notes board page: the board (notes.ts, view.ts), connected to the
// relay with the SDK's public API only, as its README says — the person's
// permissions made first (createPermissions, with the heavy search's
// estimate), then connect, then the SDK's elements wired to both. The
// elements and the status line speak English or German (setMessages, the
// page's language choice); the board itself is English. The chat in the
// tab with the person's own key (@tabrelay/tab/chat) sits beside the
// connector, on the same handlers and permissions: one card per question,
// one activity line per agent turn, whichever way in asked.

import { connect, type Status } from "@tabrelay/tab";
import { anthropicProvider, Chat, openaiProvider, type TabrelayChat } from "@tabrelay/tab/chat";
import {
  createPermissions, en, setMessages, statusWords, type Messages, type TabrelayActivity, type TabrelayConfirm, type TabrelayConnect, type TabrelayConnections,
  type TabrelayDataSwitch, type TabrelayNotice, type TabrelayPermissions,
} from "@tabrelay/tab/ui";
import { de } from "@tabrelay/tab/ui/de";
import { makeHandlers } from "./handlers.js";
import { Board, BOARDS, type BoardId, type NotesStorage } from "./notes.js";
import { pngOf } from "./picture.js";
import { estimateSearch } from "./search.js";
import { app } from "./tools.js";
import { AgentChanges } from "./undo.js";
import { mountBoard } from "./view.js";

/** relayAddress is where the relay is: the page's own origin, unless <meta name="tabrelay-relay"> names another. */
export function relayAddress(doc: Document = document): string {
  const named = doc.querySelector<HTMLMetaElement>('meta[name="tabrelay-relay"]')?.content.trim();
  return named || doc.location.origin;
}

function localStorageOrNull(): NotesStorage | null {
  try {
    return window.localStorage;
  } catch {
    return null; // site data blocked
  }
}

const $ = <T extends Element>(sel: string): T => {
  const e = document.querySelector<T>(sel);
  if (!e) throw new Error(`index.html has no ${sel}`);
  return e;
};

const storage = localStorageOrNull();
/** The board shown last in this browser is shown first. */
const BOARD_KEY = "tabrelay-demo:board";
const board = new Board({ storage, board: BOARDS.find((b) => b.id === readBoardChoice())?.id });
const notice = $<HTMLElement>("#notice");
const say = (text: string) => {
  notice.textContent = "";
  notice.textContent = text; // set anew, so a repeated sentence is read again
};

/** baseURL is the provider's API base URL a <meta name="tabrelay-NAME-base-url"> names (a gateway), or undefined. */
export function baseURL(name: string, doc: Document = document): { baseURL?: string } {
  const named = doc.querySelector<HTMLMetaElement>(`meta[name="tabrelay-${name}-base-url"]`)?.content.trim();
  return named ? { baseURL: named } : {};
}

const permissions = createPermissions({ app, estimates: { search_notes: estimateSearch } });
// Each board is a document: its data switch and notice are its own, and showing another withdraws the questions about this one.
const showBoard = () => permissions.setDocument({ id: "board:" + board.board.id, name: board.board.title });
showBoard();
// Undo turn on the activity line: the notes an agent's turn wrote or deleted come back.
const changes = new AgentChanges(board);
permissions.onUndoTurn((turn) => changes.undo(turn));
const handlers = makeHandlers({
  board, changes,
  picture: (width) => pngOf(board.all, width),
  pageUrl: () => location.origin + location.pathname,
});
const tab = connect({ relay: relayAddress(), app, permissions, handlers });
const chat = new Chat({ app, handlers, permissions, providers: [anthropicProvider(baseURL("anthropic")), openaiProvider(baseURL("openai"))] });
if (chat.hasKey) void chat.loadModels();
$<TabrelayChat>("tabrelay-chat").chat = chat;

$<TabrelayConfirm>("tabrelay-confirm").permissions = permissions;
$<TabrelayActivity>("tabrelay-activity").turns = permissions.turns;
$<TabrelayDataSwitch>("aside tabrelay-data-switch").permissions = permissions; // the notice holds a second one, its own
$<TabrelayNotice>("tabrelay-notice").permissions = permissions;
$<TabrelayPermissions>("tabrelay-permissions").permissions = permissions;
const panel = $<TabrelayConnect>("tabrelay-connect");
panel.app = app;
panel.client = tab;
const connections = $<TabrelayConnections>("tabrelay-connections");
connections.app = app;
connections.client = tab;

// The status line: every state in words; a stopped client can be started again.
const statusLine = $<HTMLElement>("#status");
const again = $<HTMLButtonElement>("#reconnect");
// The line is a live region: it changes once per state, not every second.
const showStatus = (s: Status) => {
  statusLine.dataset["state"] = s.state;
  statusLine.textContent = statusWords(s);
  again.hidden = s.state !== "stopped" || s.why === "no-storage" || s.why === "bad-relay-url";
};
tab.onStatus(showStatus);
again.addEventListener("click", () => tab.start());

// The language of the agents' controls and the status line: the elements draw their words again.
const languages: Readonly<Record<string, Messages>> = { en, de };
const language = $<HTMLSelectElement>("#language");
language.addEventListener("change", () => {
  const table = languages[language.value] ?? en;
  setMessages(table);
  statusLine.lang = table.lang;
  showStatus(tab.status);
});
$<HTMLElement>("#relay-address").textContent = relayAddress();

mountBoard({ board, root: $<HTMLElement>("#board"), onStep: () => tab.step(), say });

// The board picker: another board is another document.
const picker = $<HTMLSelectElement>("#board-select");
picker.replaceChildren(...BOARDS.map((b) => new Option(b.title, b.id, false, b.id === board.board.id)));
picker.addEventListener("change", () => {
  board.open(picker.value as BoardId);
  showBoard();
  try {
    storage?.setItem(BOARD_KEY, board.board.id);
  } catch {
    // Not kept: the next load shows the first board.
  }
  say(`Showing the board “${board.board.title}”.`);
});

function readBoardChoice(): string | null {
  try {
    return storage?.getItem(BOARD_KEY) ?? null;
  } catch {
    return null;
  }
}

// Other tabs of this browser follow the notes: each change another tab
// writes arrives as a storage event (a clear of the storage has key null).
window.addEventListener("storage", (e) => {
  if (e.storageArea === storage && (e.key === board.key || e.key === null)) board.reload();
});
if (!storage) say("This browser keeps no site data for this page: the notes hold until it closes.");
