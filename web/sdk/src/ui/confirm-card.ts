// <tabrelay-confirm>: the confirm card (seed 000 "The confirm card"). Set
// its `permissions` (createPermissions) and it shows every question they
// ask: who asks, what (the tool's title; the arguments under Details), why
// (each kind asked about), and Allow once, This connection, Always, Deny.
// A card goes as soon as its question is over (answered, or moot: the call
// cancelled or timed out, the turn stopped, the tab closing); a card that
// goes unanswered leaves a line saying so, in a status region. The first
// card takes the keyboard focus unless the person is typing elsewhere;
// Escape answers Deny.

import type { Answer, Confirmer, Permissions, Question } from "./permissions-model.js";
import { adoptStyle, Base, button, BUTTON_CSS, define, elementStyle, make, typingElsewhere, uid } from "../dom/elements.js";
import { follow, unfollow } from "../chat-messages.js";
import { messages } from "./messages.js";

const STYLE = `:where(tabrelay-confirm){display:grid;gap:var(--tabrelay-gap,.5em);font:var(--tabrelay-font,inherit);color:var(--tabrelay-fg,inherit)}
:where(tabrelay-confirm) [role=alertdialog]{background:var(--tabrelay-bg,Canvas);border:1px solid var(--tabrelay-border,#8886);border-radius:var(--tabrelay-radius,6px);padding:var(--tabrelay-padding,.75em);box-shadow:var(--tabrelay-shadow,0 2px 8px #0003)}
:where(tabrelay-confirm) [role=status]:empty{display:none}
:where(tabrelay-confirm) h2{font-size:1em;margin:0 0 .25em}
:where(tabrelay-confirm) ul{margin:.25em 0;padding-left:1.2em}
:where(tabrelay-confirm) pre{font-family:var(--tabrelay-mono,ui-monospace,monospace);font-size:.85em;white-space:pre-wrap;overflow-wrap:anywhere;max-height:12em;overflow:auto;margin:.25em 0}
:where(tabrelay-confirm) .tr-buttons{display:flex;flex-wrap:wrap;gap:var(--tabrelay-gap,.5em);margin-top:.5em}
:where(tabrelay-confirm) [data-answer=once]{background:var(--tabrelay-accent,#1a5fd0);color:var(--tabrelay-accent-fg,#fff)}
:where(tabrelay-confirm) ${BUTTON_CSS.replace(/\n/g, "\n:where(tabrelay-confirm) ")}`;
const SHEET = elementStyle("confirm", STYLE);

const ANSWERS: readonly Answer[] = ["once", "connection", "always", "deny"];

export class TabrelayConfirm extends Base {
  private permissionsValue: Permissions | undefined;
  private readonly confirmer: Confirmer = (q) => this.show(q);
  /** The open cards' answers: taken out of the page, the element answers them. */
  private readonly open = new Set<(a: Answer) => void>();
  /** The open cards and their questions, to draw their words again in another language. */
  private readonly cards = new Map<HTMLElement, Question>();
  /** Says that a card went unanswered; the question it was about, to say it again in another language. */
  private status: HTMLElement | undefined;
  private over: Question | undefined;
  /** What had the focus before the first card took it: it gets it back after the last. */
  private focusBefore: HTMLElement | undefined;

  /** The permissions whose questions this element shows; it becomes their confirmer. */
  get permissions(): Permissions | undefined {
    return this.permissionsValue;
  }

  set permissions(p: Permissions | undefined) {
    this.permissionsValue?.setConfirmer(null);
    this.permissionsValue = p;
    p?.setConfirmer(this.confirmer);
  }

  connectedCallback(): void {
    adoptStyle(this, SHEET);
    if (!this.status) this.append((this.status = make("p", { role: "status" })));
    follow(this, () => (this.cards.forEach((q, card) => this.label(card, q)), this.sayOver(this.over)));
    this.permissionsValue?.setConfirmer(this.confirmer);
  }

  /** show renders one question and resolves with the person's answer. */
  show(q: Question): Promise<Answer> {
    return new Promise((resolve) => {
      const title = uid("confirm");
      const why = uid("why");
      const first = !this.querySelector("[role=alertdialog]");
      const card = make("section", { role: "alertdialog", "aria-labelledby": title, "aria-describedby": why, tabindex: "-1", "data-call": q.id },
        make("h2", { id: title }),
        make("ul", { id: why }, ...q.reasons.map((r) => make("li", {}, r))),
        make("details", {}, make("summary", {}), make("pre", {}, q.details)),
      );
      const buttons = make("div", { class: "tr-buttons" });
      const done = (a: Answer) => {
        this.open.delete(done);
        this.cards.delete(card);
        this.remove_(card);
        resolve(a);
      };
      for (const answer of ANSWERS) buttons.append(button({ "data-answer": answer }, () => done(answer)));
      card.append(buttons);
      this.label(card, q);
      card.addEventListener("keydown", (e) => {
        if (e.key === "Escape") (e.preventDefault(), done("deny"));
      });
      q.signal.addEventListener("abort", () => {
        // Moot while still open (cancelled, timed out, withdrawn): the card goes, and a line says so.
        if (this.cards.delete(card)) this.sayOver(q);
        this.open.delete(done);
        this.remove_(card);
      }, { once: true });
      if (q.signal.aborted) return;
      this.sayOver(undefined);
      this.open.add(done);
      this.cards.set(card, q);
      this.append(card);
      q.showing();
      if (first && !typingElsewhere(this)) {
        this.focusBefore = (document.activeElement as HTMLElement | null) ?? undefined;
        card.focus();
      }
    });
  }

  /** label puts a card's own words in it: what it asks, Details, the answers (the reasons are the question's). */
  private label(card: HTMLElement, q: Question): void {
    const m = messages().confirm;
    card.querySelector("h2")!.textContent = m.heading(q.who, q.title);
    card.querySelector("summary")!.textContent = m.details;
    for (const answer of ANSWERS) card.querySelector(`button[data-answer=${answer}]`)!.textContent = m[answer];
  }

  private sayOver(q: Question | undefined): void {
    this.over = q;
    if (this.status) this.status.textContent = q ? messages().confirm.over(q.who, q.title) : "";
  }

  disconnectedCallback(): void {
    unfollow(this);
    // Out of the page, it asks no more: calls that would ask are refused
    // until it is back, and so are those its open cards asked about (Deny,
    // as a confirmer that cannot answer does), so the relay hears answered.
    this.permissionsValue?.setConfirmer(null);
    for (const done of [...this.open]) done("deny");
  }

  private remove_(card: HTMLElement): void {
    const hadFocus = card.contains(document.activeElement);
    card.remove();
    if (!hadFocus) return;
    const next = this.querySelector<HTMLElement>("[role=alertdialog]");
    if (next) return next.focus();
    const before = this.focusBefore;
    this.focusBefore = undefined;
    if (before?.isConnected) before.focus();
  }
}

/** defineConfirmElement registers <tabrelay-confirm>; importing @tabrelay/tab/ui does it in a browser. */
export function defineConfirmElement(): void {
  define("tabrelay-confirm", TabrelayConfirm);
}
