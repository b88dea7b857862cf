package tests

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/node"
)

// TestNoSecretOrArgumentInAnyLogLine runs the whole life of a connection
// with the relay logging at debug level, and fails if any line holds a
// secret or a tool argument (SPEC §5, §9): OAuth with a real client
// (registration, the waiting page, the person's approval in a headless
// tab, the code exchange), tool calls of both eras with distinctive
// argument values, refreshes and a refresh reuse, a sub-agent's token,
// refusals (out of scope, a bad token, a replayed code, wrong connect
// codes), and Forget. The values looked for are every access and refresh
// token, every authorization and connect code (as shown and as typed),
// the PKCE verifiers, the tab secret and the arguments.
func TestNoSecretOrArgumentInAnyLogLine(t *testing.T) {
	r := startRelay(t, nil)
	b, _ := pairedBrowser(t, r)
	var secrets []string
	keep := func(vs ...string) {
		for _, v := range vs {
			if v != "" {
				secrets = append(secrets, v)
			}
		}
	}
	keepTokens := func(m map[string]any) {
		for _, k := range []string{"access_token", "refresh_token"} {
			s, _ := m[k].(string)
			keep(s)
		}
	}
	secret, err := os.ReadFile(b.secretFile)
	if err != nil {
		t.Fatal(err)
	}
	keep(strings.TrimSpace(string(secret)))

	// The connection: every step a real host takes.
	h := newHost(t, r.url)
	h.register()
	f := h.authorize()
	keep(f.code, strings.ReplaceAll(f.code, "-", ""), strings.ToLower(f.code), f.verifier)
	if out, err := b.ask(r.url, "connect-info", f.code); err != nil {
		t.Fatalf("connect-info: %v %s", err, out)
	}
	if out, err := b.ask(r.url, "approve", strings.ToLower(f.code), "--scope", "counter:get,increment", "--scope", "notes:add,list"); err != nil {
		t.Fatalf("approve: %v %s", err, out)
	}
	st := h.status(f)
	code := h.codeFrom(f, st["redirect"])
	keep(code)
	status, tokens := h.exchange(f, code)
	if status != http.StatusOK {
		t.Fatalf("exchange: %d %v", status, tokens)
	}
	keepTokens(tokens)
	if status, again := h.exchange(f, code); status != http.StatusBadRequest || again["error"] != "invalid_grant" {
		t.Fatalf("a replayed code: %d %v", status, again)
	}

	// Calls with values that appear nowhere else.
	note := "zebra-quartz-" + randomString()
	by := 7_406_291_035 + int(randomByte())
	keep(note, fmt.Sprint(by))
	for _, modern := range []bool{false, true} {
		// The replayed code revoked what it issued: a new grant.
		g := newHost(t, r.url)
		_, tk := connect(t, r, b, g, "counter:get,increment", "notes:add,list")
		keepTokens(tk)
		c := &mcpClient{t: t, url: r.url + "/", token: tk["access_token"].(string), modern: modern}
		allowed(t, c.send("tools/call", map[string]any{"name": "notes", "arguments": map[string]any{"action": "add", "text": note}}, false, nil), "notes add")
		allowed(t, c.send("tools/call", map[string]any{"name": "counter", "arguments": map[string]any{"action": "increment", "by": by}}, true, nil), "counter increment")
		allowed(t, c.send("tools/call", map[string]any{"name": "notes", "arguments": map[string]any{"action": "list"}}, false, nil), "notes list")
		// Refusals: out of scope, with arguments; an unknown tool.
		refused(t, c.send("tools/call", map[string]any{"name": "counter", "arguments": map[string]any{"action": "reset", "by": by}}, false, nil), "counter")
		refused(t, c.send("tools/call", map[string]any{"name": "clear_all", "arguments": map[string]any{"why": note}}, false, nil), "clear_all")
		c.send("tools/call", map[string]any{"name": "no_such_tool_" + note, "arguments": map[string]any{"text": note}}, false, nil)
		c.send("tools/list", nil, false, nil)

		// A sub-agent's token, and a call with it.
		st, child := g.tokenExchange(c.token, "counter:get")
		if st != http.StatusOK {
			t.Fatalf("token exchange: %d %v", st, child)
		}
		keepTokens(child)
		cc := &mcpClient{t: t, url: r.url + "/", token: child["access_token"].(string), modern: modern}
		allowed(t, counterCall(cc, "get"), "counter get as the child")

		// Refreshes, then the rotated token presented after its
		// successor was used: the family is revoked.
		rt := tk["refresh_token"].(string)
		st, second := g.refresh(rt)
		if st != http.StatusOK {
			t.Fatalf("refresh: %d %v", st, second)
		}
		keepTokens(second)
		st, third := g.refresh(second["refresh_token"].(string))
		if st != http.StatusOK {
			t.Fatalf("refresh again: %d %v", st, third)
		}
		keepTokens(third)
		r.clock.Advance(61e9)
		if st, out := g.refresh(rt); st != http.StatusBadRequest {
			t.Fatalf("a reused refresh token: %d %v", st, out)
		}
	}

	// A bad token of each kind, and wrong connect codes.
	bogus := "tra_" + randomString()
	keep(bogus)
	bad := &mcpClient{t: t, url: r.url + "/", token: bogus}
	if rep := bad.send("tools/list", nil, false, nil); rep.status != http.StatusUnauthorized {
		t.Fatalf("a made-up token: %d", rep.status)
	}
	bogusRefresh := "trr_" + randomString()
	keep(bogusRefresh)
	if st, _ := h.refresh(bogusRefresh); st != http.StatusBadRequest {
		t.Fatalf("a made-up refresh token: %d", st)
	}
	h.token(url.Values{"grant_type": {"refresh_token"}, "client_id": {h.clientID}, "refresh_token": {bogusRefresh}, "resource": {"https://elsewhere.example"}})
	for range 3 {
		wrong := wrongCode()
		keep(wrong, strings.ReplaceAll(wrong, "-", ""))
		if out, err := b.ask(r.url, "approve", wrong); err == nil || !strings.Contains(out, "wrong-code") {
			t.Fatalf("a wrong code: %v %s", err, out)
		}
	}

	// Forget, from the tab: the last connection's tokens stop.
	last := newHost(t, r.url)
	_, tk := connect(t, r, b, last, "whoami")
	keepTokens(tk)
	c := &mcpClient{t: t, url: r.url + "/", token: tk["access_token"].(string)}
	g, err := r.node.OAuth().Verify(t.Context(), c.token)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := b.ask(r.url, "forget", g.ConnectionID); err != nil {
		t.Fatalf("forget: %v %s", err, out)
	}
	unauthorized(t, c, "the forgotten connection")

	lines := strings.Split(strings.TrimSpace(r.logs.String()), "\n")
	debug := 0
	for i, line := range lines {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil {
			t.Fatalf("log line %d is not JSON: %.200s", i, line)
		}
		if rec["level"] == "DEBUG" {
			debug++
		}
	}
	values := make([]any, len(secrets))
	for i, s := range secrets {
		values[i] = s
	}
	r.assertNoSecretsLogged(values...)
	if debug == 0 || len(lines) < 10 {
		t.Fatalf("%d log lines, %d at debug level: the check would prove little", len(lines), debug)
	}
	t.Logf("%d log lines (%d at debug level) checked for %d values", len(lines), debug, len(secrets))
}

func randomByte() byte {
	var b [1]byte
	rand.Read(b[:])
	return b[0]
}

// wrongCode is a connect code in the codes' alphabet that no request has
// (with all but certainty).
func wrongCode() string {
	const alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789" // oauth.connectAlphabet
	b := make([]byte, 8)
	rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b[:4]) + "-" + string(b[4:])
}

// TestEveryCallOutcomeButAResultIsOneInfoLine (issue 25 item 5): the
// operator's info log has one line per call that did not end with the
// tab's plain result — refused, timed out, detached, the person's late
// answer, no tab — naming the outcome, the connection, the tool and the
// duration, and holding none of the call's arguments or results. A call
// the tab answered logs nothing at info.
func TestEveryCallOutcomeButAResultIsOneInfoLine(t *testing.T) {
	t.Parallel() // it waits for the person's late answer: see browser_test.go
	r := startRelay(t, func(c *node.Config) { c.CallWait = 2 * time.Second })
	// The person answers 12 s after being asked: after the (fake) call
	// wait, which the test moves past at once.
	b, pairing := pairedBrowser(t, r, "--answer-after", "12s")
	_, tokens := connect(t, r, b, newHost(t, r.url), "echo", "wait", "clear_all")
	g, err := r.node.OAuth().Verify(t.Context(), tokens["access_token"].(string))
	if err != nil {
		t.Fatal(err)
	}
	secret := "okapi-" + randomString()
	client := func() *mcpClient {
		return &mcpClient{t: t, url: r.url + "/", token: tokens["access_token"].(string)}
	}
	call := func(c *mcpClient, tool string, args map[string]any) rpcReply {
		return c.send("tools/call", map[string]any{"name": tool, "arguments": args}, true, nil)
	}

	allowed(t, call(client(), "echo", map[string]any{"value": secret}), "echo")
	refused(t, call(client(), "counter", map[string]any{"action": "get", "note": secret}), "counter")
	replies := make(chan rpcReply, 2)
	go func() { replies <- call(client(), "clear_all", map[string]any{"why": secret}) }()
	go func() { replies <- call(client(), "wait", map[string]any{"ms": 600000, "note": secret}) }()
	eventually(t, func() bool {
		s, err := r.node.Inspect(t.Context(), pairing)
		return err == nil && s.Calls == 2 && s.Asking == 1
	}, "both calls in flight, the person being asked about one")
	r.clock.Advance(2 * time.Second)
	<-replies
	<-replies
	eventually(t, func() bool { return strings.Contains(r.logs.String(), `"outcome":"late_answer"`) }, "the person's late answer logged")
	for _, p := range b.tabs() {
		p.cmd.Process.Kill()
	}
	r.waitTabs(pairing, 0)
	r.clock.Advance(time.Minute) // past the grace for a tab to come back
	call(client(), "echo", map[string]any{"value": secret})

	want := map[string]string{"refused": "counter", "detached": "clear_all", "timeout": "wait", "late_answer": "clear_all", "no_tab": "echo"}
	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(r.logs.String()), "\n") {
		if strings.Contains(line, secret) || strings.Contains(line, "cleared") {
			t.Errorf("a log line holds a call's argument or result: %.300s", line)
		}
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil || rec["msg"] != "call outcome" {
			continue
		}
		outcome, _ := rec["outcome"].(string)
		seen[outcome]++
		if rec["level"] != "INFO" || rec["tool"] != want[outcome] || rec["connection"] != g.ConnectionID || rec["duration"] == nil {
			t.Errorf("the %s line: %v; want at info, with tool %s, connection %s and a duration", outcome, rec, want[outcome], g.ConnectionID)
		}
		if _, ok := rec["arguments"]; ok {
			t.Errorf("the %s line has arguments: %v", outcome, rec)
		}
	}
	for outcome := range want {
		if seen[outcome] != 1 {
			t.Errorf("%d %q lines, want 1 (all: %v)", seen[outcome], outcome, seen)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("outcome lines %v, want exactly %v", seen, want)
	}
}
