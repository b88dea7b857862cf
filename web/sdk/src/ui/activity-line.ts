// <tabrelay-activity>: the activity line (seed 000 "The activity line").
// One line per agent turn — who, how many steps, what now — with Stop
// while the turn has pending calls (Stop also withdraws its cards), and
// Dismiss once it is over, after Undo turn when the app can take the
// turn's steps back (onUndoTurn). Set its `turns` (a Permissions' turns).

import type { Turns, TurnLine } from "./turns.js";
import { button, BUTTON_CSS, define, elementStyle, make, refocus, Showing, type ElementStyle } from "../dom/elements.js";
import { messages } from "./messages.js";

const STYLE = `:where(tabrelay-activity){display:block;font:var(--tabrelay-font,inherit);color:var(--tabrelay-fg,inherit)}
:where(tabrelay-activity) ul{list-style:none;margin:0;padding:0;display:grid;gap:var(--tabrelay-gap,.5em)}
:where(tabrelay-activity) li{display:flex;align-items:center;gap:var(--tabrelay-gap,.5em);background:var(--tabrelay-bg,transparent);border-radius:var(--tabrelay-radius,6px)}
:where(tabrelay-activity) li>span{flex:1}
:where(tabrelay-activity) [data-state=asking]>span{font-weight:600}
:where(tabrelay-activity) ${BUTTON_CSS.replace(/\n/g, "\n:where(tabrelay-activity) ")}`;
const SHEET = elementStyle("activity", STYLE);

export class TabrelayActivity extends Showing<Turns> {
  protected readonly sheet: ElementStyle = SHEET;
  private readonly list = typeof document === "undefined" ? undefined : make("ul", { "aria-live": "polite" });

  get turns(): Turns | undefined {
    return this.source;
  }

  set turns(t: Turns | undefined) {
    this.source = t;
  }

  protected draw(): void {
    if (!this.list) return;
    if (!this.list.isConnected) this.append(this.list);
    const lines: readonly TurnLine[] = this.source?.lines ?? [];
    // Keep the focus on a line's button across renders: the person may be about to press Stop.
    const focused = (document.activeElement as HTMLElement | null)?.dataset?.["key"];
    const m = messages().activity;
    this.list.setAttribute("aria-label", m.label);
    // The line's first button keeps its key (Stop, then Undo turn, then
    // Dismiss), so the focus stays on the line as its state moves on.
    const press = (key: string, part: string, label: string, name: string, act: () => void) =>
      button({ "data-key": key, "data-part": part, "aria-label": name }, act, label);
    this.list.replaceChildren(...lines.map((line) => {
      const t = this.source;
      const pending = line.state === "acting" || line.state === "asking";
      const dismiss = (key: string) => press(key, "dismiss", m.dismiss, m.dismissFor(line.who), () => t?.dismiss(line.key));
      const buttons = pending ? [press(line.key, "stop", m.stop, m.stopFor(line.who), () => t?.stop(line.key))]
        : line.undoable ? [press(line.key, "undo", m.undo, m.undoFor(line.who), () => void t?.undo(line.key)), dismiss(line.key + " dismiss")]
        : [dismiss(line.key)];
      return make("li", { "data-state": line.state }, make("span", {}, line.text), ...buttons);
    }));
    if (focused) refocus(this.list, focused);
  }
}

/** defineActivityElement registers <tabrelay-activity>; importing @tabrelay/tab/ui does it in a browser. */
export function defineActivityElement(): void {
  define("tabrelay-activity", TabrelayActivity);
}
