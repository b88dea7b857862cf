package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// counterPage is an app page with the probe bundle's counter, whose reset
// deletes something saved (it asks, in the default mode), and the person's
// confirm card and activity line from the relay's UI module.
func counterPage(relay string) string {
	return sdkPage(relay, "counter", `<tabrelay-activity></tabrelay-activity>
<tabrelay-confirm></tabrelay-confirm>
`, `import { createPermissions } from "`+relay+`/sdk/v1/tabrelay-ui.js";
`,
		`[{
    name: "counter", title: "Counter", description: "Reads or changes the counter.", result: "summaries",
    inputSchema: { type: "object", properties: { action: { type: "string" } } },
    actions: [{ name: "get" }, { name: "increment", permissions: ["change"] }, { name: "reset", permissions: ["deletes-saved"] }],
  }],`,
		`let counter = 5;
window.resets = 0;
const permissions = createPermissions({ app });
const client = connect({
  relay,
  app,
  permissions,
  handlers: { counter: {
    get: () => ({ counter }),
    increment: (call) => { counter++; call.step(); return { counter }; },
    reset: (call) => { counter = 0; window.resets++; call.step(); return { counter }; },
  } },
});
document.querySelector("tabrelay-confirm").permissions = permissions;
document.querySelector("tabrelay-activity").turns = permissions.turns;
`)
}

// TestChromiumConfirmCard: a call the person's settings ask about shows a
// card in the page, naming who asks, what and why; the host's call waits
// for the answer. Allow once runs it; Deny answers the agent with the
// refusal; This connection lets the next one run without a card.
func TestChromiumConfirmCard(t *testing.T) {
	page := chromium(t)
	listen, admin := freePort(t), freePort(t)
	relayURL := "http://" + listen
	pageOrigin, pageURL := appPage(t, counterPage(relayURL))
	startServe(t, listen, admin, t.TempDir(), "ALLOWED_ORIGINS="+pageOrigin+","+origin)
	if err := chromedp.Do(page, chromedp.Navigate(pageURL)); err != nil {
		t.Fatal(err)
	}
	waitState(t, page, "connected")

	c := approvedHost(t, page, relayURL, `[{ tool: "counter" }]`)

	// reset starts a call and returns its answer, once the host has it.
	reset := func() <-chan rpcReply {
		out := make(chan rpcReply, 1)
		go func() {
			out <- c.send("tools/call", map[string]any{"name": "counter", "arguments": map[string]any{"action": "reset"}}, false, nil)
		}()
		return out
	}
	// answerCard waits for the card, checks what it says, and presses answer.
	answerCard := func(answer string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(page, patience)
		defer cancel()
		const card = `tabrelay-confirm [role=alertdialog]`
		if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(card))); err != nil {
			t.Fatalf("no confirm card: %v", err)
		}
		heading, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(card+" h2")))
		reasons, err2 := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(card+" ul")))
		if err != nil || err2 != nil || !strings.Contains(heading, "E2E Host") || !strings.Contains(heading, "Counter") || reasons == "" {
			t.Fatalf("the card says %q / %q (%v %v); want who asks, what and why", heading, reasons, err, err2)
		}
		focused, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.activeElement === document.querySelector("`+card+`")`))
		if !focused {
			t.Error("the first card did not take the keyboard focus")
		}
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(card+` button[data-answer=`+answer+`]`))); err != nil {
			t.Fatalf("press %s: %v", answer, err)
		}
		if err := chromedp.Do(ctx, chromedp.WaitNotPresent(chromedp.CSS(card))); err != nil {
			t.Fatalf("the card stays after %s: %v", answer, err)
		}
	}
	resets := func() int {
		n, err := chromedp.Run(page, chromedp.Evaluate[int](`window.resets`))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	pending := reset()
	answerCard("once")
	if rep := waitReply(t, pending); rep.err != nil || rep.result["isError"] == true || !strings.Contains(fmt.Sprint(rep.result["content"]), `"counter":0`) {
		t.Fatalf("after Allow once: %v %v", rep.err, rep.result)
	}
	if resets() != 1 {
		t.Fatalf("resets = %d after Allow once", resets())
	}

	pending = reset()
	answerCard("deny")
	if rep := waitReply(t, pending); rep.result["isError"] != true || !strings.Contains(fmt.Sprint(rep.result["content"]), "The person declined") {
		t.Fatalf("after Deny: %v %v; want the refusal sentence", rep.err, rep.result)
	}
	if resets() != 1 {
		t.Fatalf("resets = %d: Deny ran the call", resets())
	}

	pending = reset()
	answerCard("connection")
	waitReply(t, pending)
	// This connection: the next call runs without a card.
	if rep := waitReply(t, reset()); rep.err != nil || rep.result["isError"] == true {
		t.Fatalf("the call after This connection: %v %v", rep.err, rep.result)
	}
	if cards, _ := chromedp.Run(page, chromedp.Evaluate[int](`document.querySelectorAll("tabrelay-confirm [role=alertdialog]").length`)); cards != 0 || resets() != 3 {
		t.Fatalf("after This connection: %d cards, %d resets; want 0 and 3", cards, resets())
	}
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string { return fmt.Sprintf("%q", s) }
