// Package sdk holds the built tab SDK (@tabrelay/tab, dist/tabrelay.js)
// that the relay serves to apps at /sdk/, so that a page can load it with
// one <script type="module"> and no build step. The TypeScript sources
// and the build are beside this file; scripts/web-test.sh checks that the
// committed build is the sources' own.
package sdk

import (
	"crypto/sha256"
	"crypto/sha512"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

//go:embed dist/tabrelay.js
var module []byte

//go:embed package.json
var packageJSON []byte

// Module is the built ES module.
func Module() []byte { return module }

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
func Integrity() string {
	sum := sha512.Sum384(module)
	return "sha384-" + base64.StdEncoding.EncodeToString(sum[:])
}

// ETag is a strong validator of the module.
func ETag() string {
	sum := sha256.Sum256(module)
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}

// Paths the relay serves the module at. MajorPath follows the relay's
// build (revalidated hourly: the same protocol version, the newest SDK);
// VersionPath never changes (cached for a year), the one to pin with
// Integrity.
const MajorPath = "/sdk/v1/tabrelay.js"

// VersionPath is the module's path under its exact version.
func VersionPath() string { return "/sdk/" + Version() + "/tabrelay.js" }

// Handler serves the module at MajorPath and VersionPath, to pages of any
// origin (a module script is fetched with CORS): the code is public, and
// no cookie or credential goes with it.
func Handler() http.Handler {
	etag, versioned := ETag(), VersionPath()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		switch r.URL.Path {
		case versioned:
			h.Set("Cache-Control", "public, max-age=31536000, immutable")
		case MajorPath:
			h.Set("Cache-Control", "public, max-age=3600")
		default:
			http.NotFound(w, r)
			return
		}
		h.Set("Content-Type", "text/javascript; charset=utf-8")
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cross-Origin-Resource-Policy", "cross-origin")
		h.Set("ETag", etag)
		if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		h.Set("Content-Length", strconv.Itoa(len(module)))
		if r.Method != http.MethodHead {
			_, _ = w.Write(module)
		}
	})
}
