package tests

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDemoLanguageChoice switches the demo's agent controls to German and
// back in Chromium (issue 26, the SDK's messages table): the elements
// already in the page draw their words again, each says lang="de" in the
// English page, the status line follows, and a confirm card asks in
// German while what the agent reads stays English.
func TestDemoLanguageChoice(t *testing.T) {
	t.Parallel() // a browser test: see browser_test.go
	browser := chromium(t)
	p, _ := demoServe(t)
	h := connectDemo(t, browser, p.url, []string{"write_note", "delete_note", "list_notes"}, nil)
	if rep := h.call("write_note", map[string]any{"action": "add", "title": "Sprache"}); rep.isError() {
		t.Fatalf("write_note: %s %s", rep.Error, rep.text())
	}
	id := h.noteID("Sprache")
	page := h.demo
	js := func(expr string) string {
		t.Helper()
		out, err := chromedp.Run(page, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return out
	}
	choose := func(lang string) {
		t.Helper()
		js(`(() => { const s = document.getElementById("language"); s.value = "` + lang + `"; s.dispatchEvent(new Event("change")); return ""; })()`)
	}
	// The settings' switch: the notice's own, first in the page, takes the notice's lang.
	langs := `["tabrelay-connect", "tabrelay-connections", "tabrelay-confirm", "tabrelay-activity", "aside tabrelay-data-switch", "tabrelay-permissions"]
		.map((n) => n + "=" + document.querySelector(n).getAttribute("lang")).join(" ")`

	choose("de")
	for _, c := range []struct{ expr, want string }{
		{`document.querySelector("tabrelay-connect label").textContent`, "Verbindungscode"},
		{`document.querySelector("tabrelay-connections h2").textContent`, "Verbundene Agenten"},
		{`document.querySelector("tabrelay-data-switch label").textContent`, "Agenten sehen nur Namen und Zusammenfassungen"},
		{`document.querySelector("tabrelay-permissions legend").textContent`, "Was Agenten in diesem Tab tun dürfen"},
		{`document.getElementById("status").textContent`, "Mit dem Relay verbunden"},
		{langs, "tabrelay-connect=de tabrelay-connections=de tabrelay-confirm=de tabrelay-activity=de aside tabrelay-data-switch=de tabrelay-permissions=de"},
	} {
		if got := js(c.expr); !strings.HasPrefix(got, c.want) {
			t.Errorf("in German, %s = %q; want %q", c.expr, got, c.want)
		}
	}

	// The card asks in German; the agent reads Deny in English.
	_, pending := h.start("delete_note", map[string]any{"id": id})
	ctx, cancel := context.WithTimeout(page, patience)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(demoCard))); err != nil {
		t.Fatalf("no confirm card: %v", err)
	}
	card := js(`document.querySelector("tabrelay-confirm [role=alertdialog]").innerText`)
	for _, want := range []string{"Notes E2E", "möchte", "Es löscht etwas Gespeichertes.", "Einmal erlauben", "Diese Verbindung", "Immer", "Ablehnen"} {
		if !strings.Contains(card, want) {
			t.Errorf("the German card %q lacks %q", card, want)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(demoCard+` button[data-answer=deny]`)), chromedp.WaitNotPresent(chromedp.CSS(demoCard))); err != nil {
		t.Fatalf("press Ablehnen: %v", err)
	}
	if rep := waitReply(t, pending); !rep.isError() || !strings.Contains(rep.text(), "The person declined") {
		t.Fatalf("after Ablehnen the agent reads %s %s; want the English refusal", rep.Error, rep.text())
	}
	if line := js(`document.querySelector("tabrelay-activity li span").textContent`); !strings.Contains(line, "Schritt") {
		t.Errorf("the activity line %q is not German", line)
	}

	// Back to English: the words and the page's own language again.
	choose("en")
	if got := js(`document.querySelector("tabrelay-connect label").textContent`); got != "Connect code" {
		t.Errorf("back in English, the Connect panel's label is %q", got)
	}
	if got := js(langs); got != "tabrelay-connect=null tabrelay-connections=null tabrelay-confirm=null tabrelay-activity=null aside tabrelay-data-switch=null tabrelay-permissions=null" {
		t.Errorf("back in English, in an English page: %s", got)
	}
}
