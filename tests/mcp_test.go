package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/tabrelay/tabrelay/actors"
	"github.com/tabrelay/tabrelay/node"
)

// mcpClient speaks MCP over HTTP with a bearer token, in either era.
type mcpClient struct {
	t      testing.TB
	url    string
	token  string
	modern bool
	id     int
}

type rpcReply struct {
	status  int
	header  http.Header
	result  map[string]any
	err     map[string]any
	events  []map[string]any // SSE messages before the response
	rawBody string
}

func (c *mcpClient) meta() map[string]any {
	return map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{}}
}

// send posts one request; tweak may change the request before it goes.
func (c *mcpClient) send(method string, params map[string]any, sse bool, tweak func(*http.Request)) rpcReply {
	c.t.Helper()
	c.id++
	if params == nil {
		params = map[string]any{}
	}
	if c.modern {
		meta := c.meta()
		if own, ok := params["_meta"].(map[string]any); ok { // the request's own (a progress token) beside the era's
			for k, v := range own {
				meta[k] = v
			}
		}
		params["_meta"] = meta
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if sse {
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.modern {
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		if name, ok := params["name"].(string); ok {
			req.Header.Set("Mcp-Name", name)
		}
		if uri, ok := params["uri"].(string); ok {
			req.Header.Set("Mcp-Name", uri)
		}
	} else if method != "initialize" {
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	if tweak != nil {
		tweak(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	return readReply(c.t, resp)
}

func readReply(t testing.TB, resp *http.Response) rpcReply {
	t.Helper()
	r, err := tryReadReply(resp)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// tryReadReply reads a JSON-RPC answer, a JSON body or an SSE stream: the
// reply, and the messages before it. rawBody is the body, or the stream's
// last data line.
func tryReadReply(resp *http.Response) (rpcReply, error) {
	out := rpcReply{status: resp.StatusCode, header: resp.Header}
	var msgs []string
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 32<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				msgs = append(msgs, data)
				out.rawBody = data
			}
		}
		if err := sc.Err(); err != nil {
			return out, fmt.Errorf("SSE stream broke: %w", err)
		}
	} else {
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			return out, fmt.Errorf("reading the answer: %w", err)
		}
		out.rawBody = string(raw)
		msgs = append(msgs, out.rawBody)
	}
	for _, data := range msgs {
		var m map[string]any
		if json.Unmarshal([]byte(data), &m) != nil {
			continue
		}
		if _, isReply := m["id"]; isReply && m["method"] == nil {
			out.result, _ = m["result"].(map[string]any)
			out.err, _ = m["error"].(map[string]any)
		} else {
			out.events = append(out.events, m)
		}
	}
	return out, nil
}

// connectedMCP returns a relay, a tab and an MCP client with a real token.
func connectedMCP(t *testing.T) (*relay, *browser, *mcpClient) {
	return connectedMCPWith(t, nil)
}

// connectedMCPWith is connectedMCP on a relay whose config tweak changes.
func connectedMCPWith(t *testing.T, tweak func(*node.Config)) (*relay, *browser, *mcpClient) {
	r := startRelay(t, tweak)
	b, _ := pairedBrowser(t, r)
	h := newHost(t, r.url)
	_, tokens := connect(t, r, b, h)
	return r, b, &mcpClient{t: t, url: r.url + "/", token: tokens["access_token"].(string)}
}

func TestMCPToolListWithoutATabSaysSo(t *testing.T) {
	r := startRelay(t, nil)
	b, pairing := pairedBrowser(t, r)
	h := newHost(t, r.url)
	_, tokens := connect(t, r, b, h)
	c := &mcpClient{t: t, url: r.url + "/", token: tokens["access_token"].(string)}
	for _, p := range b.tabs() {
		p.cmd.Process.Kill()
	}
	r.waitTabs(pairing, 0)
	tools := c.send("tools/list", nil, false, nil).result["tools"].([]any)
	if len(tools) != 8 || !strings.Contains(tools[0].(map[string]any)["description"].(string), "No Probe tab answered") {
		t.Fatalf("tools without a tab: %v", tools[0])
	}
	// The tab left moments ago: a call waits TabGrace for it to come back,
	// then hears that no tab is open.
	replies := make(chan rpcReply, 1)
	go func() { replies <- c.send("tools/call", map[string]any{"name": "whoami"}, false, nil) }()
	eventually(t, func() bool {
		s, err := r.node.Inspect(context.Background(), pairing)
		return err == nil && s.Pending == 1
	}, "the call waits for the tab")
	r.clock.Advance(actors.DefaultTabGrace)
	rep := <-replies
	if rep.result["isError"] != true || !strings.Contains(rep.result["content"].([]any)[0].(map[string]any)["text"].(string), "open Probe in a tab") {
		t.Fatalf("call without a tab: %v", rep.result)
	}
}

func TestMCPNeedsAToken(t *testing.T) {
	r := startRelay(t, nil)
	for _, token := range []string{"", "tra_not-a-token"} {
		c := &mcpClient{t: t, url: r.url + "/", token: token}
		rep := c.send("tools/list", nil, false, nil)
		if rep.status != http.StatusUnauthorized || !strings.Contains(rep.header.Get("WWW-Authenticate"), `resource_metadata="`+r.url+`/.well-known/oauth-protected-resource"`) {
			t.Fatalf("token %q: %d %q", token, rep.status, rep.header.Get("WWW-Authenticate"))
		}
	}
}

func TestMCPHandshakeEra(t *testing.T) {
	_, _, c := connectedMCP(t)
	rep := c.send("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "e2e", "version": "1"}}, false, nil)
	if rep.result["protocolVersion"] != "2025-06-18" || rep.result["serverInfo"] == nil {
		t.Fatalf("initialize: %d %v %v", rep.status, rep.result, rep.err)
	}
	if rep := c.send("ping", nil, false, nil); rep.result == nil {
		t.Fatalf("ping: %v", rep.err)
	}
	tools := c.send("tools/list", nil, false, nil).result["tools"].([]any)
	if len(tools) != 8 {
		t.Fatalf("%d tools", len(tools))
	}
	for _, tl := range tools {
		tool := tl.(map[string]any)
		want := "runs without asking" // as the headless tab's person has set it
		if tool["name"] == "clear_all" {
			want = "the person is asked before it runs"
		}
		if !strings.Contains(tool["description"].(string), want) {
			t.Fatalf("%s: description %q does not say %q", tool["name"], tool["description"], want)
		}
	}
	rep = c.send("tools/call", map[string]any{"name": "counter", "arguments": map[string]any{"action": "increment"}}, false, nil)
	content := rep.result["content"].([]any)[0].(map[string]any)
	if !strings.Contains(content["text"].(string), `<tabrelay-data>{"counter":1}</tabrelay-data>`) {
		t.Fatalf("tools/call: %v", rep.result)
	}
	rep = c.send("tools/call", map[string]any{"name": "no_such_tool"}, false, nil)
	if rep.err == nil || rep.err["code"] != -32602.0 {
		t.Fatalf("unknown tool: %v", rep.err)
	}
	rep = c.send("resources/read", map[string]any{"uri": "ui://probe/view"}, false, nil)
	if c0 := rep.result["contents"].([]any)[0].(map[string]any); c0["mimeType"] != "text/html;profile=mcp-app" {
		t.Fatalf("view card: %v", rep.result)
	}
	if rep := c.send("no/such/method", nil, false, nil); rep.err["code"] != -32601.0 {
		t.Fatalf("unknown method: %v", rep.err)
	}
}

func TestMCPStatelessEra(t *testing.T) {
	_, _, c := connectedMCP(t)
	c.modern = true
	rep := c.send("tools/list", nil, false, nil)
	if rep.status != http.StatusOK || rep.result["resultType"] != "complete" || rep.result["cacheScope"] != "private" || rep.result["ttlMs"] == nil {
		t.Fatalf("tools/list: %d %v %v", rep.status, rep.result, rep.err)
	}
	for _, tl := range rep.result["tools"].([]any) {
		tool := tl.(map[string]any)
		if tool["name"] == "view_picture" && tool["_meta"].(map[string]any)["ui"].(map[string]any)["resourceUri"] != "ui://probe/view" {
			t.Fatalf("view_picture has no view card: %v", tool)
		}
	}
	if rep := c.send("server/discover", nil, false, nil); rep.result["supportedVersions"] == nil || rep.result["ttlMs"] == nil {
		t.Fatalf("discover: %v", rep.result)
	}
	cases := []struct {
		name   string
		tweak  func(*http.Request)
		status int
		code   float64
	}{
		{"no version header", func(r *http.Request) { r.Header.Del("MCP-Protocol-Version") }, 400, -32020},
		{"method header differs", func(r *http.Request) { r.Header.Set("Mcp-Method", "tools/call") }, 400, -32020},
		{"base64 method header", func(r *http.Request) { r.Header.Set("Mcp-Method", "=?base64?dG9vbHMvbGlzdA==?=") }, 200, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep := c.send("tools/list", nil, false, tc.tweak)
			if rep.status != tc.status || (tc.code != 0 && rep.err["code"] != tc.code) {
				t.Fatalf("%d %v", rep.status, rep.err)
			}
		})
	}
	if rep := c.send("ping", nil, false, nil); rep.status != http.StatusNotFound || rep.err["code"] != -32601.0 {
		t.Fatalf("ping in the modern era: %d %v", rep.status, rep.err)
	}
}

func TestMCPTransportRules(t *testing.T) {
	r, _, c := connectedMCP(t)
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(m, r.url+"/", nil)
		resp, _ := http.DefaultClient.Do(req)
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
			t.Fatalf("%s: %d", m, resp.StatusCode)
		}
	}
	if rep := c.send("tools/list", nil, false, func(r *http.Request) { r.Header.Set("Origin", "https://evil.test") }); rep.status != http.StatusForbidden {
		t.Fatalf("foreign Origin: %d", rep.status)
	}
	if rep := c.send("tools/list", nil, false, func(r *http.Request) { r.Host = "evil.test" }); rep.status != http.StatusForbidden ||
		!strings.Contains(rep.rawBody, "RELAY_PUBLIC_URL") || !strings.Contains(rep.rawBody, `not "evil.test"`) {
		t.Fatalf("foreign Host: %d %q, want 403 naming the public URL's setting and the Host", rep.status, rep.rawBody)
	}
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, _ := http.DefaultClient.Do(req)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notification: %d", resp.StatusCode)
	}
	req, _ = http.NewRequest(http.MethodPost, c.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,`))
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, _ = http.DefaultClient.Do(req)
	rep := readReply(t, resp)
	if rep.status != http.StatusBadRequest || rep.err["code"] != -32700.0 {
		t.Fatalf("malformed JSON: %d %v", rep.status, rep.err)
	}
}

// TestMCPCallAsksThePerson streams a call the person is asked about: the
// host hears so as progress, then the result.
func TestMCPCallAsksThePerson(t *testing.T) {
	_, _, c := connectedMCP(t)
	rep := c.send("tools/call", map[string]any{"name": "clear_all", "_meta": map[string]any{"progressToken": "p1"}}, true, nil)
	if rep.header.Get("X-Accel-Buffering") != "no" || len(rep.events) == 0 || rep.events[0]["method"] != "notifications/progress" {
		t.Fatalf("events %v (headers %v)", rep.events, rep.header)
	}
	if rep.result == nil || rep.result["isError"] == true {
		t.Fatalf("result %v %v", rep.result, rep.err)
	}
}

// TestMCPClosingTheStreamCancelsTheCall closes a host's SSE response while
// the tab runs the call: the relay cancels it and tells the tab.
func TestMCPClosingTheStreamCancelsTheCall(t *testing.T) {
	r, b, c := connectedMCP(t)
	pairing := b.pairing(r.key)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait","arguments":{"ms":600000}}}`
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, func() bool {
		s, err := r.node.Inspect(t.Context(), pairing)
		return err == nil && s.Calls == 1
	}, "the call reaches the pairing")
	resp.Body.Close() // the host goes away
	eventually(t, func() bool {
		s, err := r.node.Inspect(t.Context(), pairing)
		return err == nil && s.Calls == 0
	}, "the call is cancelled")
}

// TestNoSwitchLetsARequestWithoutAToken (issue 15 item 11): the binary
// has no test switch that opens a pairing to requests without a token (a
// reverse proxy on the same host made "loopback only" mean anyone).
func TestNoSwitchLetsARequestWithoutAToken(t *testing.T) {
	secret := t.TempDir() + "/secret"
	writeFile(secret, randomString()[:43])
	cmd := exec.Command(binary, "serve", "-test-open-pairing", secret)
	cmd.Env = []string{"RELAY_DATA_DIR=" + t.TempDir(), "ALLOWED_ORIGINS=" + origin, "RELAY_LISTEN=127.0.0.1:0"}
	out, err := cmd.CombinedOutput()
	if exitCode(err) != 2 || !strings.Contains(string(out), "flag provided but not defined: -test-open-pairing") {
		t.Fatalf("the open-pairing flag: %v\n%s", err, out)
	}
	help, _ := exec.Command(binary, "serve", "-h").CombinedOutput()
	if strings.Contains(string(help), "OPEN_PAIRING") {
		t.Fatalf("serve -h still offers the switch:\n%s", help)
	}
}
