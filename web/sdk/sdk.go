// Package sdk holds the built tab SDK (@tabrelay/tab, dist/tabrelay.js,
// its UI elements, dist/tabrelay-ui.js, their stylesheet,
// dist/tabrelay-ui.css, their German, dist/tabrelay-ui-de.js, and the chat
// in the tab, dist/tabrelay-chat.js) that the relay serves to apps at /sdk/, so that a
// page can load it with one <script type="module"> and no build step,
// compressed (gzip, brotli) for a browser that asks. The TypeScript
// sources and the build are beside this file; scripts/web-test.sh checks
// that the committed build is the sources' own.
package sdk

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/andybalholm/brotli"
)

//go:embed dist/tabrelay.js
var module []byte

//go:embed dist/tabrelay-ui.js
var uiModule []byte

//go:embed dist/tabrelay-ui.css
var uiStylesheet []byte

//go:embed dist/tabrelay-ui-de.js
var uiGerman []byte

//go:embed dist/tabrelay-chat.js
var chatModule []byte

//go:embed package.json
var packageJSON []byte

// Module is the built ES module.
func Module() []byte { return module }

// UIModule is the built module of the UI elements (<tabrelay-connect>).
func UIModule() []byte { return uiModule }

// UIStylesheet is the UI elements' stylesheet, for a page that links it
// rather than have the module adopt it (web/sdk/README.md, "Content
// Security Policy").
func UIStylesheet() []byte { return uiStylesheet }

// UIGerman is the module of the UI elements' German sentences
// (@tabrelay/tab/ui/de), for a page that calls setMessages with it.
func UIGerman() []byte { return uiGerman }

// Version is the package's version (package.json).
func Version() string {
	var p struct {
		Version string `json:"version"`
	}
	if json.Unmarshal(packageJSON, &p) != nil || p.Version == "" {
		panic("sdk: package.json names no version")
	}
	return p.Version
}

// Integrity is the module's Subresource Integrity value (sha384-…), for an
// app's <script integrity>.
func Integrity() string { return integrity(module) }

// UIIntegrity is the UI module's Subresource Integrity value.
func UIIntegrity() string { return integrity(uiModule) }

func integrity(b []byte) string {
	sum := sha512.Sum384(b)
	return "sha384-" + base64.StdEncoding.EncodeToString(sum[:])
}

// ETag is a strong validator of the module.
func ETag() string { return etagOf(module) }

// UIETag is a strong validator of the UI module.
func UIETag() string { return etagOf(uiModule) }

func etagOf(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}

// Paths the relay serves the module at. MajorPath follows the relay's
// build (revalidated hourly: the same protocol version, the newest SDK);
// VersionPath's bytes never change (cached for a year), the one to pin with
// Integrity. The relay serves only its own build: after an upgrade an
// older version's path answers 404 (web/sdk/README.md says so).
const MajorPath = "/sdk/v1/tabrelay.js"

// UIMajorPath and UIVersionPath are the UI module's, beside the core's.
// The UI module imports nothing: it drives the client an app hands it, so
// a page must load both from the same version.
const UIMajorPath = "/sdk/v1/tabrelay-ui.js"

// VersionPath is the module's path under its exact version.
func VersionPath() string { return "/sdk/" + Version() + "/tabrelay.js" }

// UIVersionPath is the UI module's path under its exact version.
func UIVersionPath() string { return "/sdk/" + Version() + "/tabrelay-ui.js" }

// ChatMajorPath and ChatVersionPath are the chat's module (@tabrelay/tab/chat),
// beside the core's; like the UI module it imports nothing.
const ChatMajorPath = "/sdk/v1/tabrelay-chat.js"

// ChatVersionPath is the chat module's path under its exact version.
func ChatVersionPath() string { return "/sdk/" + Version() + "/tabrelay-chat.js" }

// UIStylesheetMajorPath is the UI stylesheet's path beside UIMajorPath.
const UIStylesheetMajorPath = "/sdk/v1/tabrelay-ui.css"

// UIStylesheetVersionPath is the UI stylesheet's path under its exact version.
func UIStylesheetVersionPath() string { return "/sdk/" + Version() + "/tabrelay-ui.css" }

// UIGermanMajorPath is the German module's path beside UIMajorPath.
const UIGermanMajorPath = "/sdk/v1/tabrelay-ui-de.js"

// UIGermanVersionPath is the German module's path under its exact version.
func UIGermanVersionPath() string { return "/sdk/" + Version() + "/tabrelay-ui-de.js" }

// Handler serves the modules and the stylesheet at their major and
// version paths, to pages of any origin (a module script is fetched with
// CORS): the code is public, and no cookie or credential goes with it.
// A request that accepts br or gzip gets the file compressed so, once per
// relay (on the first request for it), with an ETag of its own per
// encoding and Vary: Accept-Encoding.
func Handler() http.Handler {
	paths := servedFiles()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		f, ok := paths[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h.Set("Cache-Control", f.cache)
		h.Set("Content-Type", f.ctype)
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cross-Origin-Resource-Policy", "cross-origin")
		h.Set("Vary", "Accept-Encoding")
		v := f.variants().pick(r.Header.Get("Accept-Encoding"))
		if v.coding != "" {
			h.Set("Content-Encoding", v.coding)
		}
		h.Set("ETag", v.etag)
		// If-None-Match (304), HEAD and Content-Length, as net/http does them.
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(v.body))
	})
}

const immutable, hour = "public, max-age=31536000, immutable", "public, max-age=3600"

// A servedFile is what Handler serves at a path: its variants (each
// compressed once, on its first request), its type and its caching.
type servedFile struct {
	variants     func() encodings
	ctype, cache string
}

// servedFiles maps each path Handler serves to its file.
func servedFiles() map[string]servedFile {
	const js, css = "text/javascript; charset=utf-8", "text/css; charset=utf-8"
	core := sync.OnceValue(func() encodings { return encode(module) })
	ui := sync.OnceValue(func() encodings { return encode(uiModule) })
	sheet := sync.OnceValue(func() encodings { return encode(uiStylesheet) })
	german := sync.OnceValue(func() encodings { return encode(uiGerman) })
	chat := sync.OnceValue(func() encodings { return encode(chatModule) })
	return map[string]servedFile{
		VersionPath(): {core, js, immutable}, MajorPath: {core, js, hour},
		UIVersionPath(): {ui, js, immutable}, UIMajorPath: {ui, js, hour},
		ChatVersionPath(): {chat, js, immutable}, ChatMajorPath: {chat, js, hour},
		UIStylesheetVersionPath(): {sheet, css, immutable}, UIStylesheetMajorPath: {sheet, css, hour},
		UIGermanVersionPath(): {german, js, immutable}, UIGermanMajorPath: {german, js, hour},
	}
}

// ImmutablePaths are the paths Handler serves as immutable: the files under
// /sdk/<version>/, whose bytes must never change once a relay served them
// (apps pin their integrity).
func ImmutablePaths() []string {
	var out []string
	for p, f := range servedFiles() {
		if f.cache == immutable {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// A variant is one encoding of a file: its bytes, its Content-Encoding
// ("" for none) and its strong ETag.
type variant struct {
	body   []byte
	coding string
	etag   string
}

// encodings are a file's variants, best first: br, gzip, then identity.
type encodings []variant

// ETagOf is the ETag Handler sends with body in coding ("" for none): the
// identity's ETag with the coding after a dash inside the quotes, so that
// each encoding's bytes have their own strong validator (RFC 9110 §8.8.3).
func ETagOf(body []byte, coding string) string {
	tag := etagOf(body)
	if coding == "" {
		return tag
	}
	return strings.TrimSuffix(tag, `"`) + "-" + coding + `"`
}

func encode(body []byte) encodings {
	var br, gz bytes.Buffer
	bw := brotli.NewWriterLevel(&br, brotli.BestCompression)
	gw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression) // a valid level: no error
	for _, w := range []interface {
		Write([]byte) (int, error)
		Close() error
	}{bw, gw} {
		w.Write(body) // a bytes.Buffer's writes do not fail
		w.Close()
	}
	return encodings{
		{br.Bytes(), "br", ETagOf(body, "br")},
		{gz.Bytes(), "gzip", ETagOf(body, "gzip")},
		{body, "", ETagOf(body, "")},
	}
}

// pick returns the best variant that accept (an Accept-Encoding header)
// allows: a coding named with a q above 0, or "*"; identity otherwise.
func (e encodings) pick(accept string) variant {
	q := map[string]float64{}
	for _, part := range strings.Split(accept, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		weight := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				weight = f
			}
		}
		q[strings.ToLower(strings.TrimSpace(name))] = weight
	}
	for _, v := range e[:len(e)-1] {
		w, named := q[v.coding]
		if !named {
			w, named = q["*"]
		}
		if named && w > 0 {
			return v
		}
	}
	return e[len(e)-1]
}
