// Package demo holds the Notes board, the demo app built on the tab SDK
// alone (web/demo/src, README.md): its bundle (bundle.json, written by
// tabrelay-bundle from src/tools.ts) and its page (index.html, style.css
// and the built dist/app.js), which the relay serves under /demo/. The
// TypeScript sources and the build are beside this file;
// scripts/web-test.sh checks that the committed build and bundle are the
// sources' own. It serves files and loads a bundle; it knows nothing of
// the relay's routes or configuration.
package demo

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tabrelay/tabrelay/protocol"
)

//go:embed bundle.json
var bundleJSON []byte

//go:embed index.html
var indexHTML []byte

//go:embed style.css
var styleCSS []byte

//go:embed dist/app.js
var appJS []byte

var loaded = sync.OnceValues(func() (*protocol.Bundle, error) { return protocol.LoadBundle(bundleJSON) })

// Bundle is the demo's bundle as the relay loads it. It panics when the
// embedded bundle.json does not load (a test checks that it does).
func Bundle() *protocol.Bundle {
	b, err := loaded()
	if err != nil {
		panic("demo: the embedded bundle.json does not load: " + err.Error())
	}
	return b
}

// BundleJSON is bundle.json as committed, for RELAY_BUNDLE or a copy.
func BundleJSON() []byte { return bytes.Clone(bundleJSON) }

// Path is where Handler serves the page.
const Path = "/demo/"

type file struct {
	body  []byte
	ctype string
	etag  string
}

func etagOf(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}

var files = map[string]file{
	Path:                 {indexHTML, "text/html; charset=utf-8", etagOf(indexHTML)},
	Path + "style.css":   {styleCSS, "text/css; charset=utf-8", etagOf(styleCSS)},
	Path + "dist/app.js": {appJS, "text/javascript; charset=utf-8", etagOf(appJS)},
}

// Handler serves the page under /demo/ (/demo redirects there) and
// answers 404 for any other path. The page's scripts are its own files
// (no inline script); it may connect only to this origin, over HTTP or
// its WebSocket (the relay's /tab). No inline style either (issue 26):
// the SDK's elements adopt constructable stylesheets, which style-src
// 'self' does not block (web/sdk/src/dom/elements.ts).
// Every answer is revalidated (no-cache with an ETag): a relay upgrade
// changes the page at once.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == strings.TrimSuffix(Path, "/") {
			http.Redirect(w, r, Path, http.StatusMovedPermanently)
			return
		}
		f, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "Method not allowed.", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Type", f.ctype)
		h.Set("Content-Security-Policy", contentSecurityPolicy(r.Host))
		// The page hosts <tabrelay-connect>: a page of another origin that
		// opened it keeps no handle on it (its fragment, where a connect
		// code comes in), and frame-ancestors 'none' (above) keeps it out of
		// frames (web/sdk/README.md).
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", f.etag)
		// If-None-Match (304), HEAD and Content-Length, as net/http does them.
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
	})
}

// contentSecurityPolicy is the page's policy. connect-src names the
// WebSocket form of this origin beside 'self', which not every browser
// extends to ws(s):, and the chat's providers' APIs (chatAPIs). A host
// that is not a plain host[:port] (it would end the directive) is left
// out, so 'self' and the APIs alone stand.
func contentSecurityPolicy(host string) string {
	connect := "'self'"
	if validHost(host) {
		connect += " ws://" + host + " wss://" + host
	}
	connect += " " + chatAPIs
	return "default-src 'self'; script-src 'self'; style-src 'self'; connect-src " + connect +
		"; img-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}

// chatAPIs are the origins the page's chat (@tabrelay/tab/chat) calls with
// the person's key: the Anthropic and OpenAI APIs. A gateway named in the
// page (<meta name="tabrelay-anthropic-base-url">) needs its origin here.
const chatAPIs = "https://api.anthropic.com https://api.openai.com"

func validHost(host string) bool {
	if host == "" || len(host) > 255 {
		return false
	}
	for _, c := range host {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == ':', c == '[', c == ']':
		default:
			return false
		}
	}
	return true
}
