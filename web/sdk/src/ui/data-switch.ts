// <tabrelay-data-switch>: the switch "Agents see names and summaries only"
// of the document shown (seed 000 "What agents are sent of the data"). The
// person's alone: no call can change it. While on, cell-level and
// unclassified tools are refused with a sentence and listed as refused, and
// what runs goes without pictures and single-cell values. Set its `permissions`.

import type { Permissions } from "./permissions-model.js";
import { define, elementStyle, FOCUS_CSS, make, Showing, uid, type ElementStyle } from "../dom/elements.js";
import { messages } from "./messages.js";

const STYLE = `:where(tabrelay-data-switch){display:block;font:var(--tabrelay-font,inherit);color:var(--tabrelay-fg,inherit)}
:where(tabrelay-data-switch) label{display:flex;align-items:center;gap:var(--tabrelay-gap,.5em);cursor:pointer}
:where(tabrelay-data-switch) input{accent-color:var(--tabrelay-accent,#1a5fd0)}
:where(tabrelay-data-switch) p{margin:.25em 0 0;color:var(--tabrelay-muted,inherit);opacity:.8;font-size:.9em}
:where(tabrelay-data-switch) ${FOCUS_CSS}`;
const SHEET = elementStyle("data-switch", STYLE);

export class TabrelayDataSwitch extends Showing<Permissions> {
  protected readonly sheet: ElementStyle = SHEET;
  private input: HTMLInputElement | undefined;
  private doc: HTMLElement | undefined;

  get permissions(): Permissions | undefined {
    return this.source;
  }

  set permissions(p: Permissions | undefined) {
    this.source = p;
  }

  protected draw(): void {
    if (!this.input) {
      const m = messages().dataSwitch;
      const note = uid("caveat");
      this.doc = make("span", { "data-part": "document" });
      this.input = make("input", { type: "checkbox", role: "switch", "aria-describedby": note });
      this.input.addEventListener("change", () => this.source?.setSummariesOnly(this.input!.checked));
      this.append(make("label", {}, this.input, m.label), make("p", { id: note }, this.doc, m.caveat));
    }
    const p = this.source;
    this.input.checked = p?.summariesOnly ?? false;
    this.input.disabled = !p;
    const name = p?.document.name;
    this.doc!.textContent = name ? messages().dataSwitch.forDocument(name) + " " : "";
  }

  protected override relabel(): void {
    this.input = undefined;
    this.replaceChildren();
    this.draw();
  }
}

/** defineDataSwitchElement registers <tabrelay-data-switch>; importing @tabrelay/tab/ui does it in a browser. */
export function defineDataSwitchElement(): void {
  define("tabrelay-data-switch", TabrelayDataSwitch);
}
