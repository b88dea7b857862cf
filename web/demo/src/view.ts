// The board as the person uses it: the filter (search, tag, saved only),
// the list of notes with Edit, Save and Delete, and the editor. Text goes
// in with textContent only: notes may hold anything an agent or another
// person wrote. Every change the person makes calls onStep (the page's
// tab.step(): it ends an agent's turn).

import { NoteError, type Board, type Note } from "./notes.js";

export interface ViewOptions {
  board: Board;
  root: HTMLElement;
  /** The person changed something. */
  onStep(): void;
  /** A line for the polite status region. */
  say(text: string): void;
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, ...children: (Node | string)[]): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  e.append(...children);
  return e;
}

/** mountBoard renders the board into root and keeps it current; it returns the unsubscribe. */
export function mountBoard(o: ViewOptions): () => void {
  const { board, root } = o;
  const q = root.querySelector<HTMLInputElement>("#filter-query")!;
  const tag = root.querySelector<HTMLSelectElement>("#filter-tag")!;
  const savedOnly = root.querySelector<HTMLInputElement>("#filter-saved")!;
  const list = root.querySelector<HTMLUListElement>("#note-list")!;
  const count = root.querySelector<HTMLElement>("#note-count")!;
  const form = root.querySelector<HTMLFormElement>("#editor")!;
  const heading = root.querySelector<HTMLElement>("#editor-heading")!;
  const title = form.querySelector<HTMLInputElement>("#edit-title")!;
  const body = form.querySelector<HTMLTextAreaElement>("#edit-body")!;
  const tags = form.querySelector<HTMLInputElement>("#edit-tags")!;
  const saved = form.querySelector<HTMLInputElement>("#edit-saved")!;
  const submit = form.querySelector<HTMLButtonElement>("#edit-submit")!;
  const cancel = form.querySelector<HTMLButtonElement>("#edit-cancel")!;
  const error = form.querySelector<HTMLElement>("#edit-error")!;
  let editing: string | undefined;
  let askingDelete: string | undefined;

  const render = () => {
    // The focus stays on the same control of the same note across renders.
    const active = document.activeElement as HTMLElement | null;
    const keep = active && list.contains(active) ? { id: active.dataset["id"], act: active.dataset["act"] } : undefined;
    renderTags();
    const notes = board.list({ query: q.value, tag: tag.value || undefined, saved: savedOnly.checked ? true : undefined });
    const all = board.all.length;
    count.textContent = notes.length === all ? `${all} note${all === 1 ? "" : "s"}` : `${notes.length} of ${all} notes`;
    list.replaceChildren(...notes.map(item));
    if (!notes.length) list.append(el("li", { class: "empty" }, all ? "No note matches." : "No notes yet: add one below."));
    if (keep?.id) {
      const again = list.querySelector<HTMLElement>(`[data-id="${CSS.escape(keep.id)}"][data-act="${keep.act ?? ""}"]`) ??
        list.querySelector<HTMLElement>(`[data-id="${CSS.escape(keep.id)}"][data-act="edit"]`);
      (again ?? list.closest("section")?.querySelector<HTMLElement>("h2"))?.focus();
    }
  };

  const renderTags = () => {
    const now = tag.value;
    const options = [el("option", { value: "" }, "Any tag"), ...board.tags.map((t) => el("option", { value: t }, t))];
    tag.replaceChildren(...options);
    tag.value = board.tags.includes(now) ? now : "";
  };

  const item = (n: Note): HTMLLIElement => {
    const hid = `note-${n.id}-title`;
    const facts = [n.saved ? "Saved" : "", n.tags.length ? "Tags: " + n.tags.join(", ") : "", "Updated " + new Date(n.updated).toLocaleString()].filter(Boolean);
    const saveButton = el("button", { type: "button", "data-id": n.id, "data-act": "save", "aria-pressed": String(n.saved) }, n.saved ? "Saved" : "Save");
    saveButton.setAttribute("aria-label", `Saved: ${n.title}`);
    const actions = el("div", { class: "note-actions" },
      el("button", { type: "button", "data-id": n.id, "data-act": "edit", "aria-label": `Edit ${n.title}` }, "Edit"),
      saveButton,
      el("button", { type: "button", "data-id": n.id, "data-act": "delete", "aria-label": `Delete ${n.title}` }, "Delete"));
    const li = el("li", { class: n.saved ? "note saved" : "note" },
      el("article", { "aria-labelledby": hid },
        el("h3", { id: hid }, n.title),
        el("p", { class: "note-facts" }, facts.join(" · ")),
        el("p", { class: "note-body" }, n.body),
        actions));
    if (askingDelete === n.id) {
      const question = el("p", { class: "note-question", role: "group", "aria-label": `Delete ${n.title}?` },
        `Delete “${n.title}”${n.saved ? ", a saved note" : ""}? This cannot be undone. `,
        el("button", { type: "button", "data-id": n.id, "data-act": "confirm-delete" }, "Delete it"),
        el("button", { type: "button", "data-id": n.id, "data-act": "keep" }, "Keep it"));
      li.querySelector("article")!.append(question);
    }
    return li;
  };

  list.addEventListener("click", (e) => {
    const b = (e.target as HTMLElement).closest<HTMLButtonElement>("button[data-act]");
    const id = b?.dataset["id"];
    if (!b || !id) return;
    const note = board.get(id);
    if (!note) return;
    switch (b.dataset["act"]) {
      case "edit":
        openEditor(note);
        return;
      case "save":
        change(() => board.edit(id, { saved: !note.saved }), note.saved ? `“${note.title}” is no longer saved.` : `“${note.title}” is saved.`);
        return;
      case "delete":
        askingDelete = id;
        render();
        list.querySelector<HTMLElement>(`[data-id="${CSS.escape(id)}"][data-act="keep"]`)?.focus();
        return;
      case "keep":
        askingDelete = undefined;
        render();
        list.querySelector<HTMLElement>(`[data-id="${CSS.escape(id)}"][data-act="delete"]`)?.focus();
        return;
      case "confirm-delete":
        askingDelete = undefined;
        if (editing === id) closeEditor();
        change(() => board.remove(id), `“${note.title}” was deleted.`);
        return;
    }
  });
  list.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && askingDelete) {
      const id = askingDelete;
      askingDelete = undefined;
      render();
      list.querySelector<HTMLElement>(`[data-id="${CSS.escape(id)}"][data-act="delete"]`)?.focus();
    }
  });

  const change = (fn: () => unknown, words: string): boolean => {
    try {
      fn();
    } catch (err) {
      if (!(err instanceof NoteError)) throw err;
      o.say(err.message);
      return false;
    }
    o.onStep();
    o.say(words + (board.storageFailed ? " This browser did not keep it: it holds for this page only." : ""));
    return true;
  };

  const openEditor = (n?: Note, focus = true) => {
    editing = n?.id;
    heading.textContent = n ? `Edit “${n.title}”` : "New note";
    submit.textContent = n ? "Save changes" : "Add note";
    cancel.hidden = !n;
    title.value = n?.title ?? "";
    body.value = n?.body ?? "";
    tags.value = n?.tags.join(", ") ?? "";
    saved.checked = n?.saved ?? false;
    error.textContent = "";
    if (focus) title.focus();
  };
  const closeEditor = () => {
    const was = editing;
    openEditor();
    if (was) list.querySelector<HTMLElement>(`[data-id="${CSS.escape(was)}"][data-act="edit"]`)?.focus();
  };

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const fields = { title: title.value, body: body.value, tags: tags.value.split(","), saved: saved.checked };
    const id = editing;
    try {
      const note = id ? board.edit(id, fields) : board.add(fields);
      o.onStep();
      o.say(`${id ? "Saved" : "Added"} “${note.title}”.` + (board.storageFailed ? " This browser did not keep it: it holds for this page only." : ""));
      error.textContent = "";
      if (id) closeEditor();
      else openEditor();
    } catch (err) {
      if (!(err instanceof NoteError)) throw err;
      error.textContent = err.message;
      title.focus();
    }
  });
  cancel.addEventListener("click", closeEditor);
  form.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && editing) closeEditor();
  });
  for (const c of [q, tag, savedOnly]) c.addEventListener("input", render);
  root.querySelector("#filter")?.addEventListener("submit", (e) => e.preventDefault());

  const off = board.onChange(() => {
    // A note being edited that another tab deleted: the editor says so.
    if (editing && !board.all.some((n) => n.id === editing)) {
      openEditor(undefined, false);
      error.textContent = "The note you were editing was deleted (in another tab, or by an agent).";
    }
    render();
  });
  openEditor(undefined, false);
  render();
  return off;
}
