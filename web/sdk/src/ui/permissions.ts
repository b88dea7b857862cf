// <tabrelay-permissions>: the person's permission settings (seed 000 "The
// person's permissions"). Set its `permissions` (createPermissions): it shows
// the mode as a radio group of the three presets ("Custom" when the
// settings match none, shown but not selectable) and, for each kind the
// app's declaration uses, Ask / Allow / Deny with a label and a line saying
// what the kind is. It follows changes made elsewhere (the browser's other
// tabs, the confirm card's Always) through permissions.onChange. The words
// and the model are the pure functions below (settingsView), for an app
// that draws its own; the sentences are the table's (messages.ts).

import type { AppDeclaration, PermissionKind } from "../index.js";
import { PERMISSION_KINDS, permissionKindsOf } from "../index.js";
import { MODES, type Mode, type Permissions, type Setting, type Settings } from "./permissions-model.js";
import { define, elementStyle, FOCUS_CSS, make, Showing, uid, type ElementStyle } from "../dom/elements.js";
import { messages } from "./messages.js";

const SETTINGS: readonly Setting[] = ["ask", "allow", "deny"];

export interface ModeOption {
  readonly mode: Mode | "custom";
  readonly title: string;
  readonly explanation: string;
  readonly checked: boolean;
  /** Custom cannot be picked: it is what the settings are when they match no mode. */
  readonly disabled: boolean;
}

export interface KindRow {
  readonly kind: PermissionKind;
  readonly label: string;
  readonly explanation: string;
  readonly setting: Setting;
  readonly options: readonly { readonly setting: Setting; readonly label: string; readonly checked: boolean }[];
}

/** What the settings element shows, from the settings now and the kinds the app uses. */
export interface SettingsView {
  readonly mode: Mode | "custom";
  readonly modes: readonly ModeOption[];
  readonly kinds: readonly KindRow[];
  /** Which kinds are shown, and that a mode sets the others too. */
  readonly note: string;
}

/** kindsUsed returns the kinds the app's tools and actions raise, in PERMISSION_KINDS order. */
export function kindsUsed(app: AppDeclaration): PermissionKind[] {
  const used = new Set<PermissionKind>();
  for (const tool of app.tools) {
    permissionKindsOf(tool).forEach((k) => used.add(k));
    for (const a of tool.actions ?? []) permissionKindsOf(tool, a.name).forEach((k) => used.add(k));
  }
  return PERMISSION_KINDS.filter((k) => used.has(k));
}

/** settingsView is the element's model: the modes (Custom among them, checked only when nothing else is) and a row per kind shown. */
export function settingsView(state: { readonly settings: Settings; readonly mode: Mode | "custom" }, kinds: readonly PermissionKind[]): SettingsView {
  const w = messages().permissions;
  const modes: ModeOption[] = [...Object.keys(MODES) as Mode[], "custom" as const].map((m) => ({
    mode: m, ...w.modes[m], checked: state.mode === m, disabled: m === "custom",
  }));
  const rows = kinds.map((kind) => {
    const setting = state.settings[kind];
    const { label, explanation } = w.kinds[kind];
    return { kind, label, explanation, setting, options: SETTINGS.map((s) => ({ setting: s, label: w.settings[s], checked: s === setting })) };
  });
  return { mode: state.mode, modes, kinds: rows, note: noteOf(kinds) };
}

function noteOf(kinds: readonly PermissionKind[]): string {
  const w = messages().permissions;
  return !kinds.length ? w.noKinds : kinds.length === PERMISSION_KINDS.length ? w.allKinds : w.someKinds;
}

const STYLE = `:where(tabrelay-permissions){display:block;font:var(--tabrelay-font,inherit);color:var(--tabrelay-fg,inherit)}
:where(tabrelay-permissions) fieldset{border:1px solid var(--tabrelay-border,#8886);border-radius:var(--tabrelay-radius,6px);padding:var(--tabrelay-padding,.75em);margin:0 0 var(--tabrelay-gap,.5em)}
:where(tabrelay-permissions) fieldset fieldset{border:0;padding:.25em 0;margin:0}
:where(tabrelay-permissions) legend{font-weight:600}
:where(tabrelay-permissions) label{display:inline-flex;align-items:center;gap:.3em;margin-right:var(--tabrelay-gap,.5em);cursor:pointer}
:where(tabrelay-permissions) [data-part=mode] label{display:flex}
:where(tabrelay-permissions) input{accent-color:var(--tabrelay-accent,#1a5fd0)}
:where(tabrelay-permissions) input:disabled+span{opacity:.7}
:where(tabrelay-permissions) p,:where(tabrelay-permissions) small{margin:0 0 .25em;color:var(--tabrelay-muted,inherit);opacity:.8;font-size:.9em}
:where(tabrelay-permissions) ${FOCUS_CSS}`;
const SHEET = elementStyle("permissions", STYLE);

export class TabrelayPermissions extends Showing<Permissions> {
  protected readonly sheet: ElementStyle = SHEET;
  private built: Permissions | undefined;
  private readonly group = uid("permissions");

  /** The permissions it shows and sets. */
  get permissions(): Permissions | undefined {
    return this.source;
  }

  set permissions(p: Permissions | undefined) {
    this.source = p;
  }

  protected override relabel(): void {
    this.built = undefined;
    this.draw();
  }

  /** draw builds the form once per permissions object, then only moves the checks (the focus stays where it is). */
  protected draw(): void {
    const p = this.source;
    if (!p) {
      this.replaceChildren(make("p", { "data-part": "note" }, messages().permissions.none));
      this.built = undefined;
      return;
    }
    const view = settingsView(p, kindsUsed(p.app));
    if (this.built !== p) this.build(p, view);
    for (const m of view.modes) this.radio(`[data-mode="${m.mode}"]`).checked = m.checked;
    for (const row of view.kinds) for (const o of row.options) this.radio(`[data-kind="${row.kind}"][data-setting="${o.setting}"]`).checked = o.checked;
  }

  private radio(selector: string): HTMLInputElement {
    return this.querySelector<HTMLInputElement>(`input${selector}`)!;
  }

  private build(p: Permissions, view: SettingsView): void {
    this.built = p;
    const w = messages().permissions;
    const modes = make("fieldset", { "data-part": "mode" }, make("legend", {}, w.legend));
    for (const m of view.modes) {
      const line = uid("mode");
      const input = make("input", { type: "radio", name: `${this.group}-mode`, value: m.mode, "data-mode": m.mode, "aria-describedby": line });
      input.disabled = m.disabled;
      if (m.mode !== "custom") input.addEventListener("change", () => input.checked && p.setMode(m.mode as Mode));
      modes.append(make("label", {}, input, make("span", {}, m.title)), make("small", { id: line }, m.explanation));
    }
    const note = uid("note");
    const kinds = make("fieldset", { "data-part": "kinds", "aria-describedby": note },
      make("legend", {}, w.kindsLegend), make("p", { id: note, "data-part": "note" }, view.note));
    for (const row of view.kinds) {
      const line = uid("kind");
      const group = make("fieldset", { "data-kind": row.kind, "aria-describedby": line }, make("legend", {}, row.label), make("p", { id: line }, row.explanation));
      for (const o of row.options) {
        const input = make("input", { type: "radio", name: `${this.group}-${row.kind}`, value: o.setting, "data-kind": row.kind, "data-setting": o.setting });
        input.addEventListener("change", () => input.checked && p.set(row.kind, o.setting));
        group.append(make("label", {}, input, o.label));
      }
      kinds.append(group);
    }
    this.replaceChildren(modes, kinds);
  }
}

/** definePermissionsElement registers <tabrelay-permissions>; importing @tabrelay/tab/ui does it in a browser. */
export function definePermissionsElement(): void {
  define("tabrelay-permissions", TabrelayPermissions);
}
