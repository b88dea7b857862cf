package tests

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestDemoBoardsAreDocuments (issue 24 items 1, 5, 8): each of the demo's
// boards is a document of the SDK. The notice of what agents are sent
// shows once an agent first acts on a board, and Got it (from the
// keyboard) is that board's; the data switch turned on for one board
// refuses a cell-level read there and not on the other board, and is
// still on when the person comes back to the first; showing another board
// withdraws the question waiting about this one, and the host reads why.
func TestDemoBoardsAreDocuments(t *testing.T) {
	t.Parallel() // a browser test: see browser_test.go
	browser := chromium(t)
	p, _ := demoServe(t)
	h := connectDemo(t, browser, p.url, []string{"list_notes", "read_note", "write_note", "delete_note"}, nil)
	page := h.demo
	const notice = `tabrelay-notice `
	js := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(page, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v
	}
	noticeShown := func() bool {
		return js(`document.querySelector("tabrelay-notice [data-part=body]").hidden ? "" : "shown"`) == "shown"
	}
	showBoard := func(id string) {
		t.Helper()
		js(`(() => { const s = document.getElementById("board-select"); s.value = "` + id + `"; s.dispatchEvent(new Event("change")); return s.value; })()`)
	}
	switchOn := func() string {
		return js(`String(document.querySelector("aside tabrelay-data-switch input").checked)`)
	}

	// The notice: not before an agent acts; then once, naming the board.
	if noticeShown() {
		t.Fatal("the notice shows before any agent acted")
	}
	if rep := h.call("list_notes", nil); rep.isError() {
		t.Fatalf("list_notes: %s %s", rep.Error, rep.text())
	}
	eventually(t, noticeShown, "the notice shows once the agent acted")
	if text := js(`document.querySelector("tabrelay-notice [role=status]").textContent`); !strings.Contains(text, "“My notes”") || !strings.Contains(text, "names, counts and summaries") {
		t.Fatalf("the notice says %q", text)
	}
	ctx, cancel := context.WithTimeout(page, patience)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Focus(chromedp.CSS(notice+`button[data-part=got-it]`)), chromedp.KeyEvent(kb.Enter)); err != nil {
		t.Fatalf("Got it from the keyboard: %v", err)
	}
	eventually(t, func() bool { return !noticeShown() }, "Got it hides the notice")

	// The switch, for My notes only.
	groceries := h.noteID("Groceries")
	js(`(() => { document.querySelector("aside tabrelay-data-switch input").click(); return ""; })()`)
	if doc := js(`document.querySelector("aside tabrelay-data-switch [data-part=document]").textContent`); !strings.Contains(doc, "My notes") {
		t.Fatalf("the switch says it is for %q; want My notes", doc)
	}
	eventually(t, func() bool {
		rep := h.call("read_note", map[string]any{"id": groceries})
		return rep.isError() && strings.Contains(rep.text(), "names and summaries only") && !strings.Contains(rep.text(), "Oat milk")
	}, "read_note refused on My notes with the switch on")

	showBoard("work")
	if switchOn() != "false" {
		t.Fatal("the Work board shows the switch of My notes")
	}
	if rep := h.call("write_note", map[string]any{"action": "add", "title": "Quarterly plan", "body": "Hire two people"}); rep.isError() {
		t.Fatalf("write_note on Work: %s %s", rep.Error, rep.text())
	}
	eventually(t, noticeShown, "the notice shows again for the Work board")
	plan := h.noteID("Quarterly plan")
	if rep := h.call("read_note", map[string]any{"id": plan}); rep.isError() || !strings.Contains(rep.text(), "Hire two people") {
		t.Fatalf("read_note on Work (switch off): %s %s", rep.Error, rep.text())
	}

	// A question about the Work board is withdrawn when My notes is shown.
	_, pending := h.start("delete_note", map[string]any{"id": plan})
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(demoCard))); err != nil {
		t.Fatalf("no confirm card for delete_note: %v", err)
	}
	showBoard("main")
	if err := chromedp.Do(ctx, chromedp.WaitNotPresent(chromedp.CSS(demoCard))); err != nil {
		t.Fatalf("the card stays after another board is shown: %v", err)
	}
	if rep := waitReply(t, pending); !rep.isError() || !strings.Contains(rep.text(), "withdrawn (another document is shown in the tab now)") {
		t.Fatalf("the withdrawn delete_note: %s %s; want the withdrawal and why", rep.Error, rep.text())
	}
	if switchOn() != "true" {
		t.Fatal("back on My notes, its switch is off")
	}
	if rep := h.call("read_note", map[string]any{"id": groceries}); !rep.isError() {
		t.Fatalf("read_note on My notes after coming back: %s", rep.text())
	}
	if noticeShown() {
		t.Fatal("the notice of My notes shows again after Got it")
	}
}
