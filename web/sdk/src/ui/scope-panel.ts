// The scope panel (seed 004 "What the UI shows"), as the Connect panel's
// picker and the Connections panel's "Change access" both draw it: one
// group per catalogue family with a switch for the whole row and a count
// of its verbs chosen ("3/4": the switch is on while any is), a verb row
// per action (or per tool without actions), and for a tool with actions
// "everything, also actions added later". Text only; ScopeModel holds the
// choice.

import { make, uid } from "../dom/elements.js";
import { messages } from "./messages.js";
import type { FamilyRow, ScopeModel } from "./connect-model.js";

export interface ScopePanelOptions {
  /** Each input's data-key is keyPrefix and its place, for an element that keeps the focus across renders. */
  readonly keyPrefix?: string;
  /** Every input disabled (a request is on its way). */
  readonly disabled?: boolean;
  /** Shows the descriptions beside the verbs. */
  readonly descriptions?: boolean;
  /** Called after each change the person makes, once the panel shows it. */
  onChange(): void;
}

/** scopePanel returns the rows of model's panel and sync, which shows the model as it is now. */
export function scopePanel(model: ScopeModel, o: ScopePanelOptions): { rows: HTMLElement[]; sync(): void } {
  let n = 0;
  const syncs: (() => void)[] = [];
  const sync = () => syncs.forEach((s) => s());
  // Each box with its label: an id of its own (a count: names with "-" in them could collide).
  const input = (label: string, attrs: Record<string, string>, change: (on: boolean) => void) => {
    const id = uid("box");
    const box = make("input", { type: "checkbox", id, ...(o.keyPrefix !== undefined ? { "data-key": o.keyPrefix + n++ } : {}), ...attrs });
    box.addEventListener("change", () => (change(box.checked), sync(), o.onChange()));
    return { box, label: make("label", { for: id }, label) };
  };
  const line = (b: { box: HTMLInputElement; label: HTMLElement }, note: string) =>
    make("div", {}, b.box, b.label, ...(note && o.descriptions ? [" ", make("span", { class: "tr-note" }, note)] : []));
  const row = (f: FamilyRow) => {
    const countId = uid("count");
    const count = make("span", { id: countId, "data-part": "count", class: "tr-note" });
    const toggle = input(f.title, { role: "switch", "data-family": f.name, "aria-describedby": countId }, (on) => model.setFamily(f, on));
    const lines: HTMLElement[] = [];
    for (const t of f.tools) {
      if (t.actions.length) {
        const whole = input(messages().everything(t.title), { "data-tool": t.name }, (on) => model.set(t.name, undefined, on));
        syncs.push(() => ((whole.box.checked = model.ticked(t.name)), (whole.box.disabled = !!o.disabled)));
        lines.push(line(whole, ""));
      }
      for (const v of f.verbs.filter((v) => v.tool === t.name)) {
        const b = input(v.label, { "data-tool": v.tool, ...(v.action ? { "data-action": v.action } : {}) }, (on) => model.set(v.tool, v.action, on));
        // An action is chosen, and fixed, while its whole tool is.
        syncs.push(() => ((b.box.checked = model.ticked(v.tool, v.action)), (b.box.disabled = !!o.disabled || (v.action !== undefined && model.ticked(v.tool)))));
        lines.push(line(b, v.description));
      }
    }
    syncs.push(() => {
      const { on, of } = model.count(f);
      toggle.box.checked = on > 0;
      toggle.box.disabled = !!o.disabled;
      count.textContent = `${on}/${of}`; // the switch's description
    });
    return make("fieldset", { "data-family": f.name }, make("legend", {}, toggle.box, toggle.label, " ", count), ...lines);
  };
  const rows = model.families.map(row);
  sync();
  return { rows, sync };
}
