package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/tabrelay/tabrelay/node"
	"github.com/tabrelay/tabrelay/protocol"
)

// scopedMCP connects a host whose connection may use only scope, and
// returns a client of it in the given era and its connection.
func scopedMCP(t *testing.T, r *relay, b *browser, modern bool, scope ...string) (*mcpClient, string) {
	t.Helper()
	_, c, conn := scopedHost(t, r, b, modern, scope...)
	return c, conn
}

// scopedHost is scopedMCP that also returns the host (its tokens, for a
// token exchange).
func scopedHost(t *testing.T, r *relay, b *browser, modern bool, scope ...string) (*host, *mcpClient, string) {
	t.Helper()
	h := newHost(t, r.url)
	_, tokens := connect(t, r, b, h, scope...)
	c := &mcpClient{t: t, url: r.url + "/", token: tokens["access_token"].(string), modern: modern}
	g, err := r.node.OAuth().Verify(t.Context(), c.token)
	if err != nil {
		t.Fatal(err)
	}
	return h, c, g.ConnectionID
}

func toolNames(t *testing.T, c *mcpClient) []string {
	t.Helper()
	rep := c.send("tools/list", nil, false, nil)
	var names []string
	for _, tl := range rep.result["tools"].([]any) {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	slices.Sort(names)
	return names
}

// refused checks a call was refused by the scope: a tool error the model
// reads, naming the tool, where to widen it, and that retrying won't help.
func refused(t *testing.T, rep rpcReply, tool string) {
	t.Helper()
	if rep.result == nil || rep.result["isError"] != true {
		t.Fatalf("%s was not refused: %v %v", tool, rep.result, rep.err)
	}
	text := rep.result["content"].([]any)[0].(map[string]any)["text"].(string)
	if !strings.Contains(text, `<tabrelay-data>"`+tool+`"</tabrelay-data>`) || !strings.Contains(text, "Connections panel") ||
		!strings.Contains(text, "calling again will not help") {
		t.Fatalf("refusal of %s: %q", tool, text)
	}
}

func TestScopeNarrowsWhatAConnectionSeesAndCalls(t *testing.T) {
	r := startRelay(t, nil)
	b, _ := pairedBrowser(t, r)
	for _, modern := range []bool{false, true} {
		name := map[bool]string{false: "handshake era", true: "stateless era"}[modern]
		t.Run(name, func(t *testing.T) {
			c, _ := scopedMCP(t, r, b, modern, "whoami", "counter:get")
			if got := toolNames(t, c); !slices.Equal(got, []string{"counter", "whoami"}) {
				t.Fatalf("tools/list %v", got)
			}
			if rep := c.send("tools/call", map[string]any{"name": "counter", "arguments": map[string]any{"action": "get"}}, false, nil); rep.result["isError"] == true {
				t.Fatalf("an allowed action was refused: %v", rep.result)
			}
			for _, sse := range []bool{false, true} {
				refused(t, c.send("tools/call", map[string]any{"name": "counter", "arguments": map[string]any{"action": "increment"}}, sse, nil), "counter")
				refused(t, c.send("tools/call", map[string]any{"name": "notes", "arguments": map[string]any{"action": "list"}}, sse, nil), "notes")
				refused(t, c.send("tools/call", map[string]any{"name": "counter", "arguments": map[string]any{}}, sse, nil), "counter")
			}
		})
	}
	if n := counterValue(t, r, "tabrelay_scope_refusals_total"); n != 12 {
		t.Fatalf("tabrelay_scope_refusals_total = %v, want 12", n)
	}
	if !strings.Contains(r.logs.String(), `"outcome":"refused"`) || strings.Contains(r.logs.String(), `"arguments"`) {
		t.Fatal("a refusal is not one structured log line without arguments")
	}
}

func counterValue(t *testing.T, r *relay, name string) float64 {
	t.Helper()
	n, err := testutil.GatherAndCount(r.node.Metrics(), name)
	if err != nil || n != 1 {
		t.Fatalf("metric %s: %v", name, err)
	}
	mfs, _ := r.node.Metrics().Gather()
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return -1
}

// TestAToolTheCatalogueGainsLaterIsNotGranted approves with the demo
// bundle's tools written out (as the person's dialog does), while the
// relay's catalogue already has one more: a connection never grows by
// itself.
func TestAToolTheCatalogueGainsLaterIsNotGranted(t *testing.T) {
	bigger := protocol.ProbeBundle()
	extra := bigger.Tools[0]
	extra.Name, extra.Description = "export_everything", "Exports every note and the counter."
	bigger.Tools = append(bigger.Tools, extra)
	r := startRelay(t, func(c *node.Config) { c.Bundle = bigger })
	// Approved without --scope: the CLI writes out every tool of the
	// bundle it knows, the demo one, from before the catalogue grew.
	h, f, code := approvedCode(t, r)
	_, tokens := h.exchange(f, code)
	c := &mcpClient{t: t, url: r.url + "/", token: tokens["access_token"].(string)}
	if slices.Contains(toolNames(t, c), "export_everything") {
		t.Fatal("a tool added to the catalogue later is listed for an existing connection")
	}
	refused(t, c.send("tools/call", map[string]any{"name": "export_everything"}, false, nil), "export_everything")
}

// TestNoMCPRequestCanWidenAScope tries what a host or a model could put in
// a request: scope-looking arguments, _meta and capabilities.
func TestNoMCPRequestCanWidenAScope(t *testing.T) {
	r := startRelay(t, nil)
	b, _ := pairedBrowser(t, r)
	c, conn := scopedMCP(t, r, b, false, "echo")
	before, _ := r.node.OAuth().Scope(t.Context(), conn)
	widen := []any{map[string]any{"tool": "counter", "actions": []string{"*"}}}
	c.send("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"scope": widen}}, false, nil)
	c.send("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"value": map[string]any{"scope": widen, "entries": widen}},
		"_meta": map[string]any{"scope": widen}}, false, nil)
	c.send("tools/call", map[string]any{"name": "counter", "arguments": map[string]any{"action": "reset", "scope": widen}}, true, nil)
	c.send("set-scope", map[string]any{"connection": conn, "scope": widen}, false, nil)
	after, _ := r.node.OAuth().Scope(t.Context(), conn)
	if a, _ := json.Marshal(after); string(a) != mustJSON(before) {
		t.Fatalf("the scope changed: %s → %s", mustJSON(before), a)
	}
	refused(t, c.send("tools/call", map[string]any{"name": "counter", "arguments": map[string]any{"action": "get"}}, false, nil), "counter")
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestTheTabChangesAScope: the person narrows and widens a connection from
// their tab; the next call follows.
func TestTheTabChangesAScope(t *testing.T) {
	r := startRelay(t, nil)
	b, _ := pairedBrowser(t, r)
	c, conn := scopedMCP(t, r, b, true, "whoami")
	refused(t, c.send("tools/call", map[string]any{"name": "counter", "arguments": map[string]any{"action": "get"}}, false, nil), "counter")
	if out, err := b.ask(r.url, "set-scope", "--scope", "counter:get", conn); err != nil {
		t.Fatalf("set-scope: %v %s", err, out)
	}
	if got := toolNames(t, c); !slices.Equal(got, []string{"counter"}) {
		t.Fatalf("after set-scope: %v", got)
	}
	if rep := c.send("tools/call", map[string]any{"name": "counter", "arguments": map[string]any{"action": "get"}}, false, nil); rep.result["isError"] == true {
		t.Fatalf("widened but refused: %v", rep.result)
	}
	if out, err := b.ask(r.url, "set-scope", "--scope", "no_such_tool", conn); err == nil || !strings.Contains(out, "invalid-scope") {
		t.Fatalf("an unknown tool was accepted: %v %s", err, out)
	}
	if out, err := b.ask(r.url, "set-scope", conn); err != nil {
		t.Fatalf("clear: %v %s", err, out)
	}
	if got := toolNames(t, c); len(got) != 0 {
		t.Fatalf("after clearing: %v", got)
	}
}

// TestACorruptScopeRecordRefusesEverything damages a stored record while
// the relay is stopped: after the restart, the connection's token still
// opens the relay, but every tool is refused.
func TestACorruptScopeRecordRefusesEverything(t *testing.T) {
	listen, admin, data := freePort(t), freePort(t), t.TempDir()
	first := startServe(t, listen, admin, data)
	c := first.tabAndClient(t, "whoami")
	if got := toolNames(t, c); !slices.Equal(got, []string{"whoami"}) {
		t.Fatalf("before: %v", got)
	}
	first.cmd.Process.Signal(os.Interrupt)
	<-first.exited

	db, err := bbolt.Open(filepath.Join(data, "tabrelay.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("oauth_scopes")).ForEach(func(k, _ []byte) error {
			return tx.Bucket([]byte("oauth_scopes")).Put(k, []byte(`{"version":1,"entries":[{"tool":`))
		})
	})
	db.Close()

	second := startServe(t, listen, admin, data)
	if got := toolNames(t, c); len(got) != 0 {
		t.Fatalf("a corrupt record still grants %v", got)
	}
	refused(t, c.send("tools/call", map[string]any{"name": "whoami"}, false, nil), "whoami")
	if !strings.Contains(second.stderr.String(), "scope record unreadable") {
		t.Fatalf("no error log names the connection:\n%s", second.stderr.String())
	}
}

// TestTheGuardReadsTheKeyTheTabReads tries to pass a forbidden action past
// the guard with a key of another case, or the key twice.
func TestTheGuardReadsTheKeyTheTabReads(t *testing.T) {
	r := startRelay(t, nil)
	b, _ := pairedBrowser(t, r)
	c, _ := scopedMCP(t, r, b, false, "counter:get")
	for _, args := range []string{`{"action":"reset","ACTION":"get"}`, `{"ACTION":"get","action":"reset"}`, `{"action":"get","action":"reset"}`} {
		rep := c.send("tools/call", map[string]any{"name": "counter", "arguments": json.RawMessage(args)}, false, nil)
		refused(t, rep, "counter")
	}
	if rep := c.send("tools/call", map[string]any{"name": "counter", "arguments": []string{"get"}}, false, nil); rep.err["code"] != -32602.0 {
		t.Fatalf("arguments that are not an object: %v", rep.err)
	}
}
