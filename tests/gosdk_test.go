package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/tabrelay/tabrelay/internal/syncbuf"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer is the host's HTTP client as the go-sdk sees it: it adds the
// current access token to every request and keeps a line per exchange,
// for the failure report and for checks on what the relay answered.
type bearer struct {
	mu    sync.Mutex
	token string
	seen  []exchange
}

type exchange struct {
	method, mcpMethod, session string // the request
	status                     int    // the answer (0: no answer)
	answerSession              string // Mcp-Session-Id of the answer
	challenge                  string // WWW-Authenticate of the answer
}

func (b *bearer) set(token string) {
	b.mu.Lock()
	b.token = token
	b.mu.Unlock()
}

func (b *bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	b.mu.Lock()
	token := b.token
	b.mu.Unlock()
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultTransport.RoundTrip(req)
	x := exchange{method: req.Method, mcpMethod: rpcMethod(req), session: req.Header.Get("Mcp-Session-Id")}
	if err == nil {
		x.status, x.answerSession, x.challenge = resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), resp.Header.Get("WWW-Authenticate")
	}
	b.mu.Lock()
	b.seen = append(b.seen, x)
	b.mu.Unlock()
	return resp, err
}

// rpcMethod is the JSON-RPC method a request carries, from a copy of its body.
func rpcMethod(req *http.Request) string {
	if req.GetBody == nil {
		return ""
	}
	body, err := req.GetBody()
	if err != nil {
		return ""
	}
	defer body.Close()
	var m struct {
		Method string `json:"method"`
	}
	json.NewDecoder(body).Decode(&m)
	return m.Method
}

// answered is the status of the last request of method (0: none yet).
func (b *bearer) answered(method string) int {
	status := 0
	for _, x := range b.exchanges() {
		if x.mcpMethod == method {
			status = x.status
		}
	}
	return status
}

// count is how many requests of method went out.
func (b *bearer) count(method string) int {
	n := 0
	for _, x := range b.exchanges() {
		if x.mcpMethod == method {
			n++
		}
	}
	return n
}

func (b *bearer) exchanges() []exchange {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]exchange(nil), b.seen...)
}

// TestGoSDKClient connects the official Go MCP client to the relay, with
// tokens got as a host gets them (registration, the person's approval in
// their tab, the code exchange), in both eras: the handshake one (the
// client asks for an older version and initializes) and the stateless one
// (the client's default: server/discover at 2026-07-28), there once more
// with a tools/list_changed handler, which opens subscriptions/listen.
func TestGoSDKClient(t *testing.T) {
	r := startRelay(t, nil)
	b := newBrowser(t)
	tab := b.startTab(r.url, "a", "--focus")
	b.waitSecret()
	r.waitTabs(b.pairing(r.key), 1)
	cases := []struct {
		name, ask, want string
		listen          bool
	}{
		{"handshake era 2025-06-18", "2025-06-18", "2025-06-18", false},
		{"handshake era 2025-11-25", "2025-11-25", "2025-11-25", false},
		{"stateless era", "", "2026-07-28", false},
		{"stateless era listening", "", "2026-07-28", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { goSDKSession(t, r, b, tab, tc.ask, tc.want, tc.listen) })
	}
}

func goSDKSession(t *testing.T, r *relay, b *browser, tab *tabProc, ask, want string, listen bool) {
	h := newHost(t, r.url)
	// The person grants every demo tool but notes: a call to it is refused.
	_, tokens := connect(t, r, b, h, "whoami", "counter", "clear_all", "view_picture", "echo", "wait", "fail")
	auth := &bearer{token: tokens["access_token"].(string)}
	sdkLog := &syncbuf.Buffer{}
	defer func() {
		if t.Failed() {
			for _, x := range auth.exchanges() {
				t.Logf("%s %s (session %q) → %d (session %q)", x.method, x.mcpMethod, x.session, x.status, x.answerSession)
			}
			t.Logf("go-sdk log:\n%s", sdkLog.String())
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*patience)
	defer cancel()

	opts := &mcp.ClientOptions{Logger: slog.New(slog.NewTextHandler(sdkLog, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	toolsChanged := make(chan struct{}, 8)
	if listen {
		opts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { toolsChanged <- struct{}{} }
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "tabrelay-e2e-gosdk", Version: "1"}, opts)
	transport := &mcp.StreamableClientTransport{Endpoint: r.url + "/", HTTPClient: &http.Client{Transport: auth}, MaxRetries: -1}
	cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: ask})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	init := cs.InitializeResult()
	if init.ProtocolVersion != want || init.ServerInfo == nil || init.ServerInfo.Name != "tabrelay" {
		t.Fatalf("negotiated %q with %+v, want %s from tabrelay", init.ProtocolVersion, init.ServerInfo, want)
	}
	if init.Capabilities == nil || init.Capabilities.Tools == nil || init.Capabilities.Resources == nil {
		t.Fatalf("capabilities %+v", init.Capabilities)
	}

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	byName := map[string]*mcp.Tool{}
	for _, tl := range tools.Tools {
		byName[tl.Name] = tl
	}
	for _, name := range []string{"whoami", "counter", "clear_all", "view_picture", "echo", "wait", "fail"} {
		if byName[name] == nil {
			t.Fatalf("tools/list has no %s: %d tools", name, len(tools.Tools))
		}
	}
	if byName["notes"] != nil {
		t.Fatal("tools/list shows notes, which the person did not grant")
	}
	refusal, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "notes", Arguments: map[string]any{"action": "list"}})
	if err != nil || !refusal.IsError || len(refusal.Content) == 0 {
		t.Fatalf("notes outside the scope: %+v %v", refusal, err)
	}
	if text, ok := refusal.Content[0].(*mcp.TextContent); !ok || !strings.Contains(text.Text, "Connections panel") {
		t.Fatalf("refusal %#v", refusal.Content[0])
	}
	if ui, _ := byName["view_picture"].Meta["ui"].(map[string]any); ui["resourceUri"] != "ui://probe/view" {
		t.Fatalf("view_picture _meta %v, want ui.resourceUri ui://probe/view", byName["view_picture"].Meta)
	}

	if listen {
		// The client opened subscriptions/listen at connect; once the relay
		// answered it (the subscription is in place before the answer), a
		// tab's permissions-changed reaches the client's handler, and the
		// client's cached tool list is dropped.
		eventually(t, func() bool { return auth.answered("subscriptions/listen") == http.StatusOK }, "subscriptions/listen answered")
		lists := auth.count("tools/list")
		if err := tab.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
			t.Fatal(err)
		}
		select {
		case <-toolsChanged:
		case <-ctx.Done():
			t.Fatal("no notifications/tools/list_changed after the tab's permissions-changed")
		}
		if _, err := cs.ListTools(ctx, nil); err != nil || auth.count("tools/list") != lists+1 {
			t.Fatalf("tools/list after the change: %v, %d requests (want %d)", err, auth.count("tools/list"), lists+1)
		}
	}

	counter := func(what string) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "counter", Arguments: map[string]any{"action": "increment"}})
		if err != nil {
			t.Fatalf("%s: counter: %v", what, err)
		}
		if res.IsError || len(res.Content) == 0 {
			t.Fatalf("%s: counter: %+v", what, res)
		}
		text, ok := res.Content[0].(*mcp.TextContent)
		if !ok || !strings.Contains(text.Text, `<tabrelay-data>{"counter":`) || !strings.Contains(text.Text, `</tabrelay-data>`) {
			t.Fatalf("%s: counter content %#v", what, res.Content[0])
		}
	}
	counter("first token")

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "view_picture", Arguments: map[string]any{"width": 64}})
	if err != nil || res.IsError {
		t.Fatalf("view_picture: %v %+v", err, res)
	}
	var picture *mcp.ImageContent
	for _, c := range res.Content {
		if img, ok := c.(*mcp.ImageContent); ok {
			picture = img
		}
	}
	if picture == nil || !strings.HasPrefix(picture.MIMEType, "image/") || len(picture.Data) == 0 {
		t.Fatalf("view_picture gave no image: %+v", res.Content)
	}
	if picture.MIMEType == "image/png" && !bytes.HasPrefix(picture.Data, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("view_picture: image/png data starts %q", picture.Data[:min(8, len(picture.Data))])
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fail", Arguments: map[string]any{"message": "boom"}})
	if err != nil {
		t.Fatalf("fail: a tool's failure must be a result, not a protocol error: %v", err)
	}
	if !res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "boom") {
		t.Fatalf("fail: %+v", res)
	}

	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool"})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("unknown tool: %v, want JSON-RPC error %d", err, jsonrpc.CodeInvalidParams)
	}

	read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "ui://probe/view"})
	if err != nil {
		t.Fatalf("resources/read: %v", err)
	}
	if len(read.Contents) != 1 || read.Contents[0].MIMEType != "text/html;profile=mcp-app" || !strings.Contains(read.Contents[0].Text, "<html") {
		t.Fatalf("resources/read: %+v", read.Contents)
	}

	// The access token ends; the host refreshes and goes on in the same
	// session with the new one.
	status, next := h.refresh(tokens["refresh_token"].(string))
	if status != http.StatusOK || next["access_token"] == tokens["access_token"] {
		t.Fatalf("refresh: %d %v", status, next)
	}
	auth.set(next["access_token"].(string))
	counter("refreshed token")

	// The host revokes its refresh token (RFC 7009): the family ends, and
	// the access token it holds stops working at once.
	resp, err := http.PostForm(r.url+"/revoke", url.Values{"token": {next["refresh_token"].(string)}, "client_id": {h.clientID}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %d", resp.StatusCode)
	}
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "counter", Arguments: map[string]any{"action": "get"}})
	if err == nil || !(strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), http.StatusText(http.StatusUnauthorized))) {
		t.Fatalf("a call after revocation: %v, want a 401 Unauthorized", err)
	}
	var refused *exchange
	for _, x := range auth.exchanges() {
		if x.status == http.StatusUnauthorized {
			refused = &x
		}
	}
	if refused == nil || refused.mcpMethod != "tools/call" ||
		!strings.Contains(refused.challenge, `resource_metadata="`+r.url+`/.well-known/oauth-protected-resource"`) ||
		!strings.Contains(refused.challenge, `error="invalid_token"`) {
		t.Fatalf("the refused call: %+v, want tools/call → 401 with a Bearer challenge", refused)
	}

	// What the relay answered along the way: no session ids ever (it keeps
	// none); in the handshake era the client's standalone GET stream is
	// refused with 405, as streamable HTTP allows; in the stateless era the
	// client opens none.
	for _, x := range auth.exchanges() {
		if x.answerSession != "" {
			t.Fatalf("the relay set Mcp-Session-Id %q on %s %s", x.answerSession, x.method, x.mcpMethod)
		}
		if x.method == http.MethodGet && x.status != http.StatusMethodNotAllowed {
			t.Fatalf("GET /: %d, want 405", x.status)
		}
		if x.method == http.MethodGet && want == "2026-07-28" {
			t.Fatal("the client opened a GET stream in the stateless era")
		}
	}
	r.assertNoSecretsLogged(tokens, next)
	// The client had nothing to warn about: no status, content type or
	// header of the relay's that it had to work around.
	if log := sdkLog.String(); strings.Contains(log, "level=WARN") || strings.Contains(log, "level=ERROR") {
		t.Fatalf("the go-sdk client warned:\n%s", log)
	}
	t.Log(exchangeLine(auth.exchanges()))
}

// exchangeLine is the HTTP exchanges of a session in one line.
func exchangeLine(xs []exchange) string {
	parts := make([]string, 0, len(xs))
	for _, x := range xs {
		p := x.method
		if x.mcpMethod != "" {
			p += " " + x.mcpMethod
		}
		parts = append(parts, fmt.Sprintf("%s→%d", p, x.status))
	}
	return strings.Join(parts, ", ")
}
