package tests

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The chat in the tab (issue 28, @tabrelay/tab/chat) beside the connector,
// in Chromium: the person types, the model calls a tool that asks, the
// confirm card shows "Claude (chat)", Allow once runs it; Stop mid-turn
// withdraws the card; a host's call through the relay works in the same
// page at the same time, and when both ask at once each question has its
// card and each turn its activity line; with the relay down the chat still works, and
// with the provider failing the connector still does. Once with the
// scripted provider, once with the Anthropic provider at a configured base
// URL: a local HTTP server that speaks the recorded Messages API shape
// (web/sdk/test/recorded/).

// chatPage is the counter page (counterPage's app) with <tabrelay-chat>
// beside the confirm card and the activity line; provider is a JavaScript
// expression of the chat's provider (chat is the module's namespace).
func chatPage(relay, provider string) string {
	return sdkPage(relay, "chat", `<tabrelay-activity></tabrelay-activity>
<tabrelay-confirm></tabrelay-confirm>
<tabrelay-chat></tabrelay-chat>
`, `import { createPermissions } from "`+relay+`/sdk/v1/tabrelay-ui.js";
import * as chat from "`+relay+`/sdk/v1/tabrelay-chat.js";
`,
		`[{
    name: "counter", title: "Counter", description: "Reads or changes the counter.", result: "summaries",
    inputSchema: { type: "object", properties: { action: { type: "string" } } },
    actions: [{ name: "get" }, { name: "increment", permissions: ["change"] }, { name: "reset", permissions: ["deletes-saved"] }],
  }],`,
		`let counter = 5;
window.resets = 0;
const permissions = createPermissions({ app });
const handlers = { counter: {
  get: () => ({ counter }),
  increment: (call) => { counter++; call.step(); return { counter }; },
  reset: (call) => { counter = 0; window.resets++; call.step(); return { counter }; },
} };
const client = connect({ relay, app, permissions, handlers });
document.querySelector("tabrelay-confirm").permissions = permissions;
document.querySelector("tabrelay-activity").turns = permissions.turns;
const bar = new chat.Chat({ app, handlers, permissions, providers: [`+provider+`] });
document.querySelector("tabrelay-chat").chat = bar;
window.chatBar = bar;
if (bar.hasKey) bar.loadModels();
`)
}

// scriptedModel is the scripted provider of the chat page: it resets the
// counter, then says so; to "Ask me" it asks the person to choose, and
// says what they chose; window.modelFails makes it refuse the key.
const scriptedModel = `chat.scriptedProvider(Array.from({ length: 40 }, () => (req) => {
  if (window.modelFails) throw new chat.ProviderFailure("auth", "invalid x-api-key");
  const last = req.messages[req.messages.length - 1];
  const say = (text) => ({ stop: "end", parts: [{ type: "text", text }] });
  const call = (name, args) => ({ stop: "tools", parts: [{ type: "call", id: "call-" + req.messages.length, name, arguments: args }] });
  if (last.role === "tool") return say("The counter is reset.");
  if (last.text.endsWith("Ask me")) return call("ask_person", { question: "Which one?", choices: ["Milk", "Eggs"] });
  if (/(Milk|Eggs)$/.test(last.text)) return say("You chose " + last.text.slice(-4) + ".");
  return call("counter", { action: "reset" });
}), { name: "Claude" })`

// sendChat types text into the chat's message field and presses Send.
func sendChat(t *testing.T, page engineTab, text string) {
	t.Helper()
	waitTrue(t, page, `!document.querySelector("tabrelay-chat [data-action=send]").disabled`, "the chat ready to send")
	if err := page.typeText("tabrelay-chat textarea[aria-label=Message]", text); err != nil {
		t.Fatal(err)
	}
	if err := page.click("tabrelay-chat [data-action=send]"); err != nil {
		t.Fatal(err)
	}
}

// chatCard waits for the confirm card of the chat's call and checks that it names the chat.
func chatCard(t *testing.T, page engineTab) {
	t.Helper()
	const card = `tabrelay-confirm [role=alertdialog]`
	waitTrue(t, page, visible(card), "a confirm card for the chat's call")
	if heading := evalAs[string](t, page, `document.querySelector("`+card+` h2").textContent`); !strings.Contains(heading, "Claude (chat)") {
		t.Fatalf("the card says %q; want it to name Claude (chat)", heading)
	}
}

// connectorWorks has the host call counter get through the relay and checks the answer.
func connectorWorks(t *testing.T, c *mcpClient, what string) {
	t.Helper()
	rep := c.send("tools/call", map[string]any{"name": "counter", "arguments": map[string]any{"action": "get"}}, false, nil)
	if rep.err != nil || rep.result["isError"] == true || !strings.Contains(fmt.Sprint(rep.result["content"]), `"counter"`) {
		t.Fatalf("%s: the connector's call answered %v %v", what, rep.err, rep.result)
	}
}

// allowChatCall answers the chat's card with Allow once and waits for the model's closing words.
func allowChatCall(t *testing.T, page engineTab, resetsBefore int, closing string) {
	t.Helper()
	chatCard(t, page)
	if err := page.click(`tabrelay-confirm [role=alertdialog] button[data-answer=once]`); err != nil {
		t.Fatal(err)
	}
	waitTrue(t, page, `document.querySelector("tabrelay-chat [role=log]").textContent.includes(`+jsString(closing)+`)`, "the model's answer after the call")
	if got := evalAs[int](t, page, `window.resets`); got != resetsBefore+1 {
		t.Fatalf("resets = %d after Allow once; want %d", got, resetsBefore+1)
	}
}

func TestBrowserChatScripted(t *testing.T) {
	t.Parallel() // a browser test: see browser_test.go
	e := startChromium(t)
	listen, admin := freePort(t), freePort(t)
	relayURL := "http://" + listen
	pageOrigin, pageURL := appPageOf(t, func() string { return chatPage(relayURL, scriptedModel) })
	p := startServe(t, listen, admin, t.TempDir(), "ALLOWED_ORIGINS="+pageOrigin+","+origin)
	page := openTab(t, e, pageURL)
	waitStateIn(t, page, "connected")
	c := approvedHostIn(t, page, relayURL, `[{ tool: "counter" }]`)

	// The person types; the model's call asks; Allow once runs it.
	sendChat(t, page, "Reset the counter")
	allowChatCall(t, page, 0, "The counter is reset.")
	connectorWorks(t, c, "beside the chat")

	// Stop mid-turn withdraws the card; the call is not run.
	sendChat(t, page, "Reset it again")
	chatCard(t, page)
	if err := page.click("tabrelay-chat [data-action=stop]"); err != nil {
		t.Fatal(err)
	}
	waitTrue(t, page, `!document.querySelector("tabrelay-confirm [role=alertdialog]")`, "the card withdrawn by Stop")
	waitTrue(t, page, `document.querySelector("tabrelay-chat [role=log]").textContent.includes("You stopped this turn.")`, "the stopped turn's note")
	if got := evalAs[int](t, page, `window.resets`); got != 1 {
		t.Fatalf("resets = %d after Stop; want 1", got)
	}

	// The model asks: the choices are buttons above the message field; a
	// click sends one, and so does Enter, keeping a half-typed draft.
	sendChat(t, page, "Ask me")
	const choice = `tabrelay-chat [role=group][aria-label=Choices] button`
	waitTrue(t, page, visible(choice), "the question's choices")
	if err := page.typeText("tabrelay-chat textarea[aria-label=Message]", "half typed"); err != nil {
		t.Fatal(err)
	}
	if err := page.click(choice + `:nth-of-type(2)`); err != nil {
		t.Fatal(err)
	}
	waitTrue(t, page, `document.querySelector("tabrelay-chat [role=log]").textContent.includes("You chose Eggs.")`, "the choice sent as the person's message")
	if draft := evalAs[string](t, page, `document.querySelector("tabrelay-chat textarea[aria-label=Message]").value`); draft != "half typed" {
		t.Fatalf("the draft is %q after a choice; want it kept", draft)
	}
	evalAs[any](t, page, `document.querySelector("tabrelay-chat textarea[aria-label=Message]").value = ""`)
	sendChat(t, page, "Ask me")
	waitTrue(t, page, visible(choice), "the question's choices again")
	if err := page.typeText(choice+`:nth-of-type(1)`, "\r"); err != nil {
		t.Fatal(err)
	}
	waitTrue(t, page, `document.querySelector("tabrelay-chat [role=log]").textContent.includes("You chose Milk.")`, "the choice sent by Enter")

	// Both ways in asking at once: one card per question, one activity
	// line per turn; each answer runs its own call.
	hostReset := make(chan rpcReply, 1)
	go func() {
		hostReset <- c.send("tools/call", map[string]any{"name": "counter", "arguments": map[string]any{"action": "reset"}}, false, nil)
	}()
	const card = `tabrelay-confirm [role=alertdialog]`
	waitTrue(t, page, `(document.querySelector("`+card+` h2") || {}).textContent?.includes("E2E Host")`, "the host's card")
	sendChat(t, page, "Reset it, please")
	waitTrue(t, page, `[...document.querySelectorAll("tabrelay-activity li")].filter((li) => li.dataset.state === "asking").length === 2`,
		lazy(func() string {
			return "two activity lines asking: " + evalAs[string](t, page, `document.querySelector("tabrelay-activity").textContent`)
		}))
	heads := evalAs[[]string](t, page, `[...document.querySelectorAll("`+card+` h2")].map((h) => h.textContent)`)
	if len(heads) != 2 || !strings.Contains(strings.Join(heads, "|"), "E2E Host") || !strings.Contains(strings.Join(heads, "|"), "Claude (chat)") {
		t.Fatalf("the cards say %q; want one for each question", heads)
	}
	// Allow once on the host's card (marked, to click it as the person does).
	evalAs[any](t, page, `[...document.querySelectorAll("`+card+`")].find((c) => c.querySelector("h2").textContent.includes("E2E Host")).dataset.probe = "host"`)
	if err := page.click(card + `[data-probe=host] button[data-answer=once]`); err != nil {
		t.Fatal(err)
	}
	if rep := waitReply(t, hostReset); rep.err != nil || rep.result["isError"] == true {
		t.Fatalf("the host's reset after Allow once: %v %v", rep.err, rep.result)
	}
	resetsBefore := evalAs[int](t, page, `window.resets`)
	allowChatCall(t, page, resetsBefore, "The counter is reset.")

	// The provider failing: the chat says what to do in one line; the connector still works.
	evalAs[any](t, page, `window.modelFails = true`)
	sendChat(t, page, "Once more")
	waitTrue(t, page, `document.querySelector("tabrelay-chat [role=log]").textContent.includes("refused the key")`, "the chat's failure in words")
	connectorWorks(t, c, "with the chat's provider failing")
	evalAs[any](t, page, `window.modelFails = false`)

	// The relay down: the chat still works.
	p.cmd.Process.Kill()
	<-p.exited
	waitTrue(t, page, `((window.tabrelayStatus || {}).state || "") !== "connected"`, "the page sees the relay gone")
	sendChat(t, page, "Reset while the relay is down")
	allowChatCall(t, page, evalAs[int](t, page, `window.resets`), "The counter is reset.")
}

// anthropicServer is a local HTTP server that speaks the Anthropic
// Messages API as recorded (web/sdk/test/recorded/): GET /v1/models, and
// POST /v1/messages streamed — a tool_use resetting the counter after the
// person's message, the recorded text reply after a tool result. fail
// makes it refuse the key (401, authentication_error).
type anthropicServer struct {
	*httptest.Server
	mu   sync.Mutex
	fail bool
	keys []string // the x-api-key of each request
	urls []string
}

func newAnthropicServer(t *testing.T) *anthropicServer {
	t.Helper()
	recorded := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "web", "sdk", "test", "recorded", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	models, text, tool := recorded("anthropic-models.json"), recorded("anthropic-stream-text.sse"), string(recorded("anthropic-stream-tool.sse"))
	// The recorded tool call, made the counter's reset.
	tool = strings.Replace(tool, `"name":"add_note"`, `"name":"counter"`, 1)
	tool = strings.Replace(tool, `"partial_json":"{\"title\": \"Mi"`, `"partial_json":"{\"action\": \"re"`, 1)
	tool = strings.Replace(tool, `"partial_json":"lk\", \"tags\": [\"shop\"]}"`, `"partial_json":"set\"}"`, 1)
	s := &anthropicServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		if r.Method == http.MethodOptions {
			w.Header().Set("Access-Control-Allow-Headers", "content-type, x-api-key, anthropic-version, anthropic-dangerous-direct-browser-access")
			w.Header().Set("Access-Control-Allow-Methods", "GET, POST")
			return
		}
		s.mu.Lock()
		s.keys = append(s.keys, r.Header.Get("x-api-key"))
		s.urls = append(s.urls, r.URL.String())
		fail := s.fail
		s.mu.Unlock()
		if fail {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`))
			return
		}
		switch r.URL.Path {
		case "/v1/models":
			w.Write(models)
		case "/v1/messages":
			var body struct {
				Messages []struct {
					Content []struct{ Type string } `json:"content"`
				} `json:"messages"`
			}
			raw, _ := io.ReadAll(r.Body)
			if json.Unmarshal(raw, &body) != nil || len(body.Messages) == 0 {
				http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad body"}}`, http.StatusBadRequest)
				return
			}
			last := body.Messages[len(body.Messages)-1].Content
			w.Header().Set("Content-Type", "text/event-stream")
			if len(last) > 0 && last[0].Type == "tool_result" {
				w.Write([]byte(strings.Replace(string(text), "Done: the note ", "The counter ", 1)))
			} else {
				w.Write([]byte(tool))
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func TestBrowserChatAnthropicAtABaseURL(t *testing.T) {
	t.Parallel() // a browser test: see browser_test.go
	e := startChromium(t)
	api := newAnthropicServer(t)
	listen, admin := freePort(t), freePort(t)
	relayURL := "http://" + listen
	pageOrigin, pageURL := appPageOf(t, func() string {
		return chatPage(relayURL, `chat.anthropicProvider({ baseURL: `+jsString(api.URL)+` })`)
	})
	startServe(t, listen, admin, t.TempDir(), "ALLOWED_ORIGINS="+pageOrigin+","+origin)
	page := openTab(t, e, pageURL)
	waitStateIn(t, page, "connected")
	c := approvedHostIn(t, page, relayURL, `[{ tool: "counter" }]`)

	// The person enters a key: kept, out of the DOM, and the models listed from the API.
	const key = "sk-ant-test-7f3a9c"
	if err := page.typeText("tabrelay-chat input[type=password]", key); err != nil {
		t.Fatal(err)
	}
	if err := page.click("tabrelay-chat [data-action=keep-key]"); err != nil {
		t.Fatal(err)
	}
	waitTrue(t, page, `document.querySelector("tabrelay-chat select[aria-label=Model]").options.length === 2`, "the models listed from the API")

	sendChat(t, page, "Reset the counter")
	// The model's closing words are the recorded reply's.
	allowChatCall(t, page, 0, "The counter is on the board.")
	connectorWorks(t, c, "beside the chat")

	if evalAs[bool](t, page, `document.documentElement.outerHTML.includes(`+jsString(key)+`) || [...document.querySelectorAll("input")].some((i) => i.value.includes(`+jsString(key)+`))`) {
		t.Fatal("the key is in the page's DOM")
	}
	// A copy, so a failure does not leave the server's handler waiting on mu.
	api.mu.Lock()
	keys, urls := slices.Clone(api.keys), slices.Clone(api.urls)
	api.mu.Unlock()
	if len(keys) == 0 {
		t.Fatal("no request reached the API")
	}
	for i, k := range keys {
		if k != key || strings.Contains(urls[i], key) {
			t.Fatalf("request %d to the API: key %q, URL %q", i, k, urls[i])
		}
	}

	// The provider refusing the key: the chat says what to do; the connector still works.
	api.mu.Lock()
	api.fail = true
	api.mu.Unlock()
	sendChat(t, page, "Again")
	waitTrue(t, page, `document.querySelector("tabrelay-chat [role=log]").textContent.includes("refused the key")`, "the chat's failure in words")
	connectorWorks(t, c, "with the provider failing")
}
