package tests

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
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

// TestBrowserConfirmCard, in each engine: a call the person's settings
// ask about shows a card in the page, naming who asks, what and why; the
// host's call waits for the answer. Allow once runs it; Deny answers the
// agent with the refusal; This connection lets the next one run without a
// card.
func TestBrowserConfirmCard(t *testing.T) {
	inEachEngine(t, func(t *testing.T, e *engine) {
		listen, admin := freePort(t), freePort(t)
		relayURL := "http://" + listen
		pageOrigin, pageURL := appPage(t, counterPage(relayURL))
		startServe(t, listen, admin, t.TempDir(), "ALLOWED_ORIGINS="+pageOrigin+","+origin)
		page := openTab(t, e, pageURL)
		waitStateIn(t, page, "connected")
		c := approvedHostIn(t, page, relayURL, `[{ tool: "counter" }]`)

		// reset starts a call and returns its answer, once the host has it.
		reset := func() <-chan rpcReply {
			out := make(chan rpcReply, 1)
			go func() {
				out <- c.send("tools/call", map[string]any{"name": "counter", "arguments": map[string]any{"action": "reset"}}, false, nil)
			}()
			return out
		}
		resets := func() int { return evalAs[int](t, page, `window.resets`) }

		pending := reset()
		answerCard(t, page, "once")
		if rep := waitReply(t, pending); rep.err != nil || rep.result["isError"] == true || !strings.Contains(fmt.Sprint(rep.result["content"]), `"counter":0`) {
			t.Fatalf("after Allow once: %v %v", rep.err, rep.result)
		}
		if resets() != 1 {
			t.Fatalf("resets = %d after Allow once", resets())
		}

		pending = reset()
		answerCard(t, page, "deny")
		// The refusal is the SDK's own sentence: after the data, not in it,
		// the host's name (others' words) marked as data (issue 24 item 7).
		if rep := waitReply(t, pending); rep.result["isError"] != true || !declined.MatchString(rep.text()) {
			t.Fatalf("after Deny: %v %v; want the refusal sentence after the data tag", rep.err, rep.result)
		}
		if resets() != 1 {
			t.Fatalf("resets = %d: Deny ran the call", resets())
		}

		pending = reset()
		answerCard(t, page, "connection")
		waitReply(t, pending)
		// This connection: the next call runs without a card.
		if rep := waitReply(t, reset()); rep.err != nil || rep.result["isError"] == true {
			t.Fatalf("the call after This connection: %v %v", rep.err, rep.result)
		}
		if cards := evalAs[int](t, page, `document.querySelectorAll("tabrelay-confirm [role=alertdialog]").length`); cards != 0 || resets() != 3 {
			t.Fatalf("after This connection: %d cards, %d resets; want 0 and 3", cards, resets())
		}
	})
}

// declined is the text a host reads of a call the person declined.
var declined = regexp.MustCompile(`^<tabrelay-data>null</tabrelay-data>\n\nThe person declined to let <tabrelay-data>"[^<]+"</tabrelay-data> run “[^”<]+”\.$`)

// answerCard waits for the page's confirm card, checks what it says and
// that it took the keyboard focus, and presses answer.
func answerCard(t *testing.T, page engineTab, answer string) {
	t.Helper()
	const card = `tabrelay-confirm [role=alertdialog]`
	waitTrue(t, page, visible(card), "a confirm card")
	heading := evalAs[string](t, page, `document.querySelector("`+card+` h2").textContent`)
	reasons := evalAs[string](t, page, `document.querySelector("`+card+` ul").textContent`)
	if !strings.Contains(heading, "E2E Host") || !strings.Contains(heading, "Counter") || reasons == "" {
		t.Fatalf("the card says %q / %q; want who asks, what and why", heading, reasons)
	}
	if !evalAs[bool](t, page, `document.activeElement === document.querySelector("`+card+`")`) {
		t.Error("the card did not take the keyboard focus")
	}
	if err := page.click(card + ` button[data-answer=` + answer + `]`); err != nil {
		t.Fatalf("press %s: %v", answer, err)
	}
	waitTrue(t, page, `!document.querySelector("`+card+`")`, "the card gone after "+answer)
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string { return fmt.Sprintf("%q", s) }
