package tests

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The person's controls of issue 24 in the demo, in Chromium: Undo turn on
// the activity line, and a question asked from a running handler.

// TestDemoUndoTurn: an agent's turn adds a note, edits one and deletes a
// saved one (the person allows the delete on its card); once the turn is
// done its activity line offers Undo turn, and pressing it brings the
// board back as it was: the added note gone, the edit and the deletion
// taken back. The line then says undone and offers Undo turn no more.
func TestDemoUndoTurn(t *testing.T) {
	t.Parallel() // a browser test: see browser_test.go
	browser := chromium(t)
	p, _ := demoServe(t)
	h := connectDemo(t, browser, p.url, []string{"list_notes", "read_note", "write_note", "delete_note"}, nil)
	groceries, lisbon := h.noteID("Groceries"), h.noteID("Trip to Lisbon")
	// The page's board before the turn: every note's title and body.
	const boardText = `JSON.stringify(JSON.parse(localStorage.getItem("tabrelay-demo:notes")).map((n) => [n.id, n.title, n.body, n.saved]).sort())`
	before, err := chromedp.Run(h.demo, chromedp.Evaluate[string](boardText))
	if err != nil {
		t.Fatal(err)
	}
	const undo = `tabrelay-activity button[data-part=undo]`
	undoButtons := func() int {
		n, _ := chromedp.Run(h.demo, chromedp.Evaluate[int](`document.querySelectorAll("`+undo+`").length`))
		return n
	}

	if rep := h.call("write_note", map[string]any{"action": "add", "title": "Written in the turn"}); rep.isError() {
		t.Fatalf("write_note add: %s %s", rep.Error, rep.text())
	}
	if rep := h.call("write_note", map[string]any{"action": "edit", "id": groceries, "body": "Nothing left to buy."}); rep.isError() {
		t.Fatalf("write_note edit: %s %s", rep.Error, rep.text())
	}
	_, pending := h.start("delete_note", map[string]any{"id": lisbon})
	if err := chromedp.Do(h.demo, chromedp.WaitVisible(chromedp.CSS(demoCard))); err != nil {
		t.Fatalf("no card for delete_note: %v", err)
	}
	if n := undoButtons(); n != 0 {
		t.Fatalf("%d Undo turn buttons while a call of the turn waits for the person", n)
	}
	answerDemoCard(t, h.demo, "once")
	if rep := waitReply(t, pending); rep.isError() {
		t.Fatalf("delete_note: %s %s", rep.Error, rep.text())
	}
	line := func() string {
		s, _ := chromedp.Run(h.demo, chromedp.Evaluate[string](`document.querySelector("tabrelay-activity li")?.textContent ?? ""`))
		return s
	}
	eventually(t, func() bool { return undoButtons() == 1 }, "the done turn's line offers Undo turn (the line: %q)", line())
	if l := line(); !strings.Contains(l, "Notes E2E") || !strings.Contains(l, "3 steps") {
		t.Fatalf("the line says %q; want who and 3 steps", l)
	}
	ctx, cancel := context.WithTimeout(h.demo, patience)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(undo))); err != nil {
		t.Fatalf("press Undo turn: %v", err)
	}
	eventually(t, func() bool {
		now, _ := chromedp.Run(h.demo, chromedp.Evaluate[string](boardText))
		return now == before
	}, "the board is back as it was before the turn")
	if l := line(); !strings.Contains(l, "undone") || undoButtons() != 0 {
		t.Fatalf("after Undo turn the line says %q with %d Undo buttons; want undone and none", l, undoButtons())
	}
	// The agent sees it too: the deleted note is back, the added one gone.
	rep := h.call("list_notes", nil)
	if !strings.Contains(rep.text(), "Trip to Lisbon") || strings.Contains(rep.text(), "Written in the turn") {
		t.Fatalf("list_notes after Undo turn: %s", rep.text())
	}
	if rep := h.call("read_note", map[string]any{"id": groceries}); !strings.Contains(rep.text(), "Oat milk") {
		t.Fatalf("read_note after Undo turn: %s", rep.text())
	}
}

// TestDemoExportAsksWithItsSize: export_notes asks from its handler, once
// it knows the export's size (confirmAt: handler): the card's why starts
// with the size; Allow once answers the export, Deny the refusal, and a
// card left open past the call's wait (15 s here) answers the host that the person is
// being asked (the relay's detach rule), as a card before the handler does.
func TestDemoExportAsksWithItsSize(t *testing.T) {
	t.Parallel() // a browser test: see browser_test.go
	browser := chromium(t)
	p, _ := demoServe(t, "TAB_CALL_WAIT=15s")
	h := connectDemo(t, browser, p.url, []string{"list_notes", "export_notes"}, nil)
	why := func() string {
		ctx, cancel := context.WithTimeout(h.demo, patience)
		defer cancel()
		if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(demoCard))); err != nil {
			t.Fatalf("no card for export_notes: %v", err)
		}
		s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("`+demoCard+` ul li")?.textContent ?? ""`))
		return s
	}

	_, pending := h.start("export_notes", map[string]any{"format": "json"})
	if w := why(); !strings.HasPrefix(w, "The export is ") || !strings.Contains(w, "kB: 8 notes as JSON") {
		t.Fatalf("the card's why starts %q; want the export's size", w)
	}
	answerDemoCard(t, h.demo, "once")
	if rep := waitReply(t, pending); rep.isError() || !strings.Contains(rep.text(), `"notes":8`) {
		t.Fatalf("export_notes after Allow once: %s %s", rep.Error, rep.text())
	}

	_, pending = h.start("export_notes", nil)
	if w := why(); !strings.Contains(w, "as Markdown") {
		t.Fatalf("the card's why %q", w)
	}
	answerDemoCard(t, h.demo, "deny")
	if rep := waitReply(t, pending); !rep.isError() || !strings.Contains(rep.text(), "declined") {
		t.Fatalf("export_notes after Deny: %s %s", rep.Error, rep.text())
	}

	// Left open past TAB_CALL_WAIT: the host hears the person is being asked.
	_, pending = h.start("export_notes", nil)
	why()
	var rep tsReply
	select { // longer than waitReply's patience: the relay's wait is 15 s
	case rep = <-pending:
	case <-time.After(15*time.Second + 4*patience):
		t.Fatal("the host got no answer after the relay's wait")
	}
	if !rep.OK || !strings.Contains(rep.text(), "being asked") {
		t.Fatalf("a handler's card left open: %s %s; want the detach sentence", rep.Error, rep.text())
	}
	answerDemoCard(t, h.demo, "deny")
}

// TestDemoScopePanel: the Connect panel's picker and the Connections
// panel's Change access are the scope panel of seed 004 — a row per
// catalogue family (read, change, view) with a switch and a count of its
// verbs chosen, a verb row per action. The row switch turns a whole family
// on and off; one verb of it leaves the row on, partly ("1/3"); what is
// saved is what the rows show.
func TestDemoScopePanel(t *testing.T) {
	t.Parallel() // a browser test: see browser_test.go
	browser := chromium(t)
	p, _ := demoServe(t)
	eval := func(ctx context.Context, js string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return s
	}
	// rows says each family row of the panel under root: name, count, switch on or off.
	rows := func(ctx context.Context, root string) string {
		return eval(ctx, `[...document.querySelectorAll("`+root+` fieldset[data-family]")].map((f) =>
  f.dataset.family + " " + f.querySelector("[data-part=count]").textContent + " " + (f.querySelector("input[role=switch]").checked ? "on" : "off")).join(", ")`)
	}
	click := func(ctx context.Context, sel string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, patience)
		defer cancel()
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
			t.Fatalf("click %s: %v", sel, err)
		}
	}
	const connect = "tabrelay-connect"
	h := connectDemo(t, browser, p.url, []string{"list_notes", "read_note", "write_note:add"}, func(demo context.Context) {
		click(demo, connect+` input[data-family=change]`) // off, as the host asked nothing of it: on
		if got, want := rows(demo, connect), "read 0/4 off, change 3/3 on, view 0/1 off"; got != want {
			t.Fatalf("the Connect panel's rows after the change switch: %q; want %q", got, want)
		}
		click(demo, connect+` input[data-family=change]`)
		click(demo, connect+` input[data-tool=write_note][data-action=add]`)
		if got, want := rows(demo, connect), "read 0/4 off, change 1/3 on, view 0/1 off"; got != want {
			t.Fatalf("the Connect panel's rows after one verb: %q; want %q", got, want)
		}
		if n := eval(demo, `String(document.querySelectorAll("`+connect+` fieldset[data-family=change] input[data-action]").length)`); n != "2" {
			t.Fatalf("%s verb rows for write_note's actions; want 2 (add, edit)", n)
		}
	})

	const panel = "tabrelay-connections"
	ctx, cancel := context.WithTimeout(h.demo, patience)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(panel+` button[data-part=edit]`))); err != nil {
		t.Fatalf("the Connections panel offers no Change access: %v", err)
	}
	click(h.demo, panel+` button[data-part=edit]`)
	if got, want := rows(h.demo, panel), "read 2/4 on, change 1/3 on, view 0/1 off"; got != want {
		t.Fatalf("Change access shows %q; want the connection's scope, %q", got, want)
	}
	click(h.demo, panel+` input[data-family=change]`) // partly on: off
	click(h.demo, panel+` input[data-family=change]`) // on: the whole family
	if got, want := rows(h.demo, panel), "read 2/4 on, change 3/3 on, view 0/1 off"; got != want {
		t.Fatalf("Change access after the change switch: %q; want %q", got, want)
	}
	click(h.demo, panel+` button[data-part=save]`)
	eventually(t, func() bool {
		return strings.Contains(eval(h.demo, `document.querySelector("`+panel+` dd[data-part=scope]")?.textContent ?? ""`), "Delete a note")
	}, "the saved scope names Delete a note")
	if rep := h.call("write_note", map[string]any{"action": "edit", "id": h.noteID("Groceries"), "body": "Saved scope."}); rep.isError() {
		t.Fatalf("write_note edit after Change access: %s %s", rep.Error, rep.text())
	}
}

// TestDemoTwoAgentsAreTwoLines: two hosts connected to one demo tab, each
// with a call waiting for the person (delete_note asks): the activity line
// shows two lines, one per agent, each with its own Stop; Stop on one
// withdraws that agent's card and answers it, the other's line and card
// stay, and its Allow once still runs its call.
func TestDemoTwoAgentsAreTwoLines(t *testing.T) {
	t.Parallel() // a browser test: see browser_test.go
	browser := chromium(t)
	p, _ := demoServe(t)
	scope := []string{"list_notes", "delete_note"}
	first := connectDemo(t, browser, p.url, scope, nil)
	second := connectDemo(t, browser, p.url, scope, nil)
	// The first approval's tab goes: both agents' calls reach the second's.
	if err := chromedp.Do(first.demo, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	page := second.demo
	count := func(css string) int {
		n, _ := chromedp.Run(page, chromedp.Evaluate[int](`document.querySelectorAll("`+css+`").length`))
		return n
	}
	_, firstDone := first.start("delete_note", map[string]any{"id": first.noteID("Groceries")})
	eventually(t, func() bool { return count(demoCard) == 1 }, "the first agent's card")
	_, secondDone := second.start("delete_note", map[string]any{"id": second.noteID("Trip to Lisbon")})
	eventually(t, func() bool { return count(demoCard) == 2 }, "the second agent's card")
	const asking = `tabrelay-activity li[data-state=asking]`
	eventually(t, func() bool { return count(asking) == 2 }, "two lines, both waiting for the person")
	lines, _ := chromedp.Run(page, chromedp.Evaluate[[]string](`[...document.querySelectorAll("`+asking+`")].map((li) => li.textContent)`))
	if len(lines) != 2 || lines[0] == lines[1] || !strings.Contains(lines[0], "Notes E2E") || !strings.Contains(lines[1], "Notes E2E") {
		t.Fatalf("the lines: %q; want one per agent", lines)
	}
	// Stop on the first line: the first agent's card goes and it hears the sentence.
	ctx, cancel := context.WithTimeout(page, patience)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(asking+`:first-child button[data-part=stop]`))); err != nil {
		t.Fatalf("press Stop on the first line: %v", err)
	}
	if rep := waitReply(t, firstDone); !rep.isError() || !strings.Contains(rep.text(), "stopped") {
		t.Fatalf("the stopped agent: %s %s", rep.Error, rep.text())
	}
	eventually(t, func() bool { return count(demoCard) == 1 && count(asking) == 1 }, "one card and one waiting line left")
	answerDemoCard(t, page, "once")
	if rep := waitReply(t, secondDone); rep.isError() {
		t.Fatalf("the other agent's delete after Allow once: %s %s", rep.Error, rep.text())
	}
	if rep := second.call("list_notes", nil); strings.Contains(rep.text(), "Trip to Lisbon") || !strings.Contains(rep.text(), "Groceries") {
		t.Fatalf("after one Stop and one Allow once: %s", rep.text())
	}
}
