// <tabrelay-notice>: the one-time notice of what agents are sent (seed 000
// "What agents are sent of the data"). Once an agent first acts on a
// document, it says compactly what agents get (names, counts and
// summaries; values and pictures when they ask), with the document's data
// switch and Got it, which is remembered for that document. Set its
// `permissions`.

import type { Permissions } from "./permissions-model.js";
import { button, BUTTON_CSS, define, elementStyle, make, Showing, uid, type ElementStyle } from "../dom/elements.js";
import type { TabrelayDataSwitch } from "./data-switch.js";
import { messages } from "./messages.js";

const STYLE = `:where(tabrelay-notice){display:block;font:var(--tabrelay-font,inherit);color:var(--tabrelay-fg,inherit)}
:where(tabrelay-notice) [data-part=body]{display:grid;gap:var(--tabrelay-gap,.5em);padding:var(--tabrelay-padding,.75em);border:1px solid var(--tabrelay-border,#8886);border-radius:var(--tabrelay-radius,6px);background:var(--tabrelay-bg,transparent)}
:where(tabrelay-notice) p{margin:0}
:where(tabrelay-notice) button{justify-self:start}
:where(tabrelay-notice) ${BUTTON_CSS.replace(/\n/g, "\n:where(tabrelay-notice) ")}`;
const SHEET = elementStyle("notice", STYLE);

export class TabrelayNotice extends Showing<Permissions> {
  protected readonly sheet: ElementStyle = SHEET;
  private parts: { text: HTMLElement; body: HTMLElement; toggle: TabrelayDataSwitch } | undefined;

  get permissions(): Permissions | undefined {
    return this.source;
  }

  set permissions(p: Permissions | undefined) {
    this.source = p;
  }

  protected draw(): void {
    if (!this.parts) {
      const m = messages().notice;
      // The sentence is a live region that stays in the page: it is read out when the notice comes.
      const text = make("p", { id: uid("notice"), role: "status", "data-part": "text" });
      const toggle = document.createElement("tabrelay-data-switch") as TabrelayDataSwitch;
      const gotIt = button({ "data-part": "got-it" }, () => this.source?.gotIt(), m.gotIt);
      const body = make("div", { role: "group", "aria-label": m.label, "data-part": "body", hidden: true }, toggle, gotIt);
      this.append(text, body);
      this.parts = { text, body, toggle };
    }
    const p = this.source;
    const due = p?.noticeDue ?? false;
    const text = due ? messages().notice.text(p!.document.name) : "";
    if (this.parts.text.textContent !== text) this.parts.text.textContent = text;
    this.parts.body.hidden = !due;
    this.parts.toggle.permissions = p;
  }

  /** Another language: the parts are made anew in it (the switch inside follows by itself). */
  protected override relabel(): void {
    this.parts = undefined;
    this.replaceChildren();
    this.draw();
  }
}

/** defineNoticeElement registers <tabrelay-notice>; importing @tabrelay/tab/ui does it in a browser. */
export function defineNoticeElement(): void {
  define("tabrelay-notice", TabrelayNotice);
}
