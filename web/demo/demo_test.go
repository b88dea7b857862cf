package demo_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tabrelay/tabrelay/protocol"
	"github.com/tabrelay/tabrelay/web/demo"
)

// The tools other code (tests, the live check) calls by name.
var tools = []string{"list_notes", "read_note", "write_note", "delete_note", "export_notes", "search_notes", "board_picture"}

func TestBundleLoads(t *testing.T) {
	b := demo.Bundle() // panics when it does not load
	if b.App.Name != "notes" || b.App.Title != "Notes board" || b.Version != "notes-1" {
		t.Errorf("app = %+v, version %q; want notes, Notes board, notes-1", b.App, b.Version)
	}
	var names []string
	for _, tool := range b.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Equal(names, tools) {
		t.Errorf("tools = %v, want %v", names, tools)
	}
	if _, err := protocol.LoadBundle(demo.BundleJSON()); err != nil {
		t.Errorf("BundleJSON does not load: %v", err)
	}
	// Every tool the instructions name in backticks exists.
	for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(b.Instructions, -1) {
		if _, ok := b.Tool(m[1]); !ok {
			t.Errorf("the instructions name `%s`, which is no tool", m[1])
		}
	}
}

func TestTheToolsAsDeclared(t *testing.T) {
	b := demo.Bundle()
	tool := func(name string) *protocol.Tool {
		t.Helper()
		tl, ok := b.Tool(name)
		if !ok {
			t.Fatalf("no tool %s", name)
		}
		return tl
	}
	for _, c := range []struct {
		name, result string
		kinds        []string
		readOnly     bool
	}{
		{"list_notes", "summaries", nil, true},
		{"read_note", "cells", nil, true},
		{"write_note", "summaries", nil, false},
		{"delete_note", "none", []string{"deletes-saved"}, false},
		{"export_notes", "cells", []string{"large-download"}, true},
		{"search_notes", "summaries", []string{"heavy"}, true},
		{"board_picture", "cells", nil, true},
	} {
		tl := tool(c.name)
		if tl.Result != c.result || !slices.Equal(tl.Permissions, c.kinds) {
			t.Errorf("%s: result %q, permissions %v; want %q, %v", c.name, tl.Result, tl.Permissions, c.result, c.kinds)
		}
		readOnly := tl.Annotations != nil && tl.Annotations.ReadOnlyHint != nil && *tl.Annotations.ReadOnlyHint
		if readOnly != c.readOnly {
			t.Errorf("%s: readOnlyHint %v, want %v", c.name, readOnly, c.readOnly)
		}
	}
	if d := tool("delete_note").Annotations; d == nil || d.DestructiveHint == nil || !*d.DestructiveHint {
		t.Error("delete_note: no destructiveHint")
	}
	w := tool("write_note")
	if len(w.Actions) != 2 || w.Actions[0].Name != "add" || w.Actions[1].Name != "edit" {
		t.Errorf("write_note actions = %+v, want add and edit", w.Actions)
	}
	for _, a := range w.Actions {
		if !slices.Equal(a.Permissions, []string{"change"}) {
			t.Errorf("write_note %s: permissions %v, want [change]", a.Name, a.Permissions)
		}
	}
	if p := tool("board_picture"); p.UI != "ui://notes/board" {
		t.Errorf("board_picture ui = %q", p.UI)
	}
}

func TestTheViewCard(t *testing.T) {
	b := demo.Bundle()
	if len(b.Resources) != 1 {
		t.Fatalf("resources = %d, want 1", len(b.Resources))
	}
	r := b.Resources[0]
	if r.URI != "ui://notes/board" || r.Name != "notes-board" || r.MimeType != protocol.UIMimeType {
		t.Errorf("resource = %s %s %s", r.URI, r.Name, r.MimeType)
	}
	card, err := os.ReadFile("dist/card.html")
	if err != nil {
		t.Fatal(err)
	}
	if r.Text != string(card) {
		t.Error("the resource's text is not dist/card.html: run npm run build in web/demo")
	}
	// Self-contained: a host loads it with nothing else to fetch.
	for _, bad := range []string{"<script src", "<link", "@import", "src=\"http", "src='http"} {
		if strings.Contains(r.Text, bad) {
			t.Errorf("the card holds %q: it must be one self-contained document", bad)
		}
	}
	for _, want := range []string{`id="refresh"`, `id="open"`, `role="alert"`, "board_picture"} {
		if !strings.Contains(r.Text, want) {
			t.Errorf("the card lacks %q", want)
		}
	}
}

// The page has a handler for every tool: the handlers' object keys survive
// minification, and the page's client refuses to start without one each
// (the unit tests run it). This catches a tool added to the bundle only.
func TestThePageHandlesEveryTool(t *testing.T) {
	app, err := os.ReadFile("dist/app.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range tools {
		if !regexp.MustCompile(`[{,]` + name + `:`).Match(app) {
			t.Errorf("dist/app.js has no handler %s", name)
		}
	}
	var raw struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(demo.BundleJSON(), &raw); err != nil || len(raw.Tools) != len(tools) {
		t.Errorf("bundle.json: %d tools (%v), want %d", len(raw.Tools), err, len(tools))
	}
}

func TestServesThePage(t *testing.T) {
	srv := httptest.NewServer(demo.Handler())
	defer srv.Close()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(method, path string, header ...string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body bytes.Buffer
		_, _ = body.ReadFrom(resp.Body)
		return resp, body.Bytes()
	}
	index, _ := os.ReadFile("index.html")
	app, _ := os.ReadFile("dist/app.js")
	css, _ := os.ReadFile("style.css")
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, c := range []struct {
		path, ctype string
		body        []byte
	}{
		{"/demo/", "text/html; charset=utf-8", index},
		{"/demo/dist/app.js", "text/javascript; charset=utf-8", app},
		{"/demo/style.css", "text/css; charset=utf-8", css},
	} {
		t.Run(c.path, func(t *testing.T) {
			resp, body := get(http.MethodGet, c.path)
			h := resp.Header
			if resp.StatusCode != http.StatusOK || !bytes.Equal(body, c.body) {
				t.Fatalf("GET %s: %d, %d bytes; want 200 and the file", c.path, resp.StatusCode, len(body))
			}
			// COOP: a page that opened the demo cannot steer its fragment (issue 23).
			if h.Get("Content-Type") != c.ctype || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Cache-Control") != "no-cache" ||
				h.Get("Cross-Origin-Opener-Policy") != "same-origin" {
				t.Errorf("headers: %v", h)
			}
			csp := h.Get("Content-Security-Policy")
			for _, want := range []string{"default-src 'self'", "script-src 'self';", "connect-src 'self' ws://" + host + " wss://" + host + " https://api.anthropic.com https://api.openai.com;", "frame-ancestors 'none'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("CSP %q lacks %q", csp, want)
				}
			}
			if strings.Contains(csp, "unsafe-eval") || strings.Contains(csp, "unsafe-inline") {
				t.Errorf("CSP %q allows inline or eval'd script or style", csp)
			}
			etag := h.Get("ETag")
			if etag == "" {
				t.Fatal("no ETag")
			}
			if resp, _ := get(http.MethodGet, c.path, "If-None-Match", etag); resp.StatusCode != http.StatusNotModified {
				t.Errorf("If-None-Match: %d, want 304", resp.StatusCode)
			}
			if resp, body := get(http.MethodHead, c.path); resp.StatusCode != http.StatusOK || len(body) != 0 {
				t.Errorf("HEAD: %d with %d bytes", resp.StatusCode, len(body))
			}
		})
	}
	if resp, _ := get(http.MethodGet, "/demo"); resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/demo/" {
		t.Errorf("GET /demo: %d to %q, want a redirect to /demo/", resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, path := range []string{"/demo/index.html", "/demo/bundle.json", "/demo/dist/card.html", "/demo/src/page.ts", "/demo/../go.mod", "/", "/demox"} {
		if resp, _ := get(http.MethodGet, path); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, resp.StatusCode)
		}
	}
	if resp, _ := get(http.MethodPost, "/demo/"); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /demo/: %d, want 405", resp.StatusCode)
	}
	// index.html loads only its own files, with no inline script.
	for _, m := range regexp.MustCompile(`<script[^>]*>`).FindAll(index, -1) {
		if !bytes.Contains(m, []byte(`src="dist/app.js"`)) {
			t.Errorf("index.html has a script other than dist/app.js: %s", m)
		}
	}
	if regexp.MustCompile(`<script[^>]*>[^<]`).Match(index) {
		t.Error("index.html has an inline script")
	}
}

func TestAHostThatWouldBreakThePolicyIsLeftOut(t *testing.T) {
	req := httptest.NewRequest(http.MethodGet, "/demo/", nil)
	req.Host = "evil.example; script-src *"
	rec := httptest.NewRecorder()
	demo.Handler().ServeHTTP(rec, req)
	if csp := rec.Header().Get("Content-Security-Policy"); strings.Contains(csp, "evil") || !strings.Contains(csp, "connect-src 'self' https://api.anthropic.com https://api.openai.com;") {
		t.Errorf("CSP = %q", csp)
	}
}
