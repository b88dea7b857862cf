// Package sdk holds the built tab SDK (@tabrelay/tab, dist/tabrelay.js,
// and its UI elements, dist/tabrelay-ui.js) that the relay serves to apps
// at /sdk/, so that a page can load it with
// one <script type="module"> and no build step. The TypeScript sources
// and the build are beside this file; scripts/web-test.sh checks that the
// committed build is the sources' own.
package sdk

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"time"
)

//go:embed dist/tabrelay.js
var module []byte

//go:embed dist/tabrelay-ui.js
var uiModule []byte

//go:embed package.json
var packageJSON []byte

// Module is the built ES module.
func Module() []byte { return module }

// UIModule is the built module of the UI elements (<tabrelay-connect>).
func UIModule() []byte { return uiModule }

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

// Handler serves the modules at their major and version paths, to pages
// of any origin (a module script is fetched with CORS): the code is
// public, and no cookie or credential goes with it.
func Handler() http.Handler {
	type file struct {
		body  []byte
		etag  string
		cache string
	}
	const year, hour = "public, max-age=31536000, immutable", "public, max-age=3600"
	files := map[string]file{
		VersionPath(): {module, ETag(), year}, MajorPath: {module, ETag(), hour},
		UIVersionPath(): {uiModule, UIETag(), year}, UIMajorPath: {uiModule, UIETag(), hour},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		f, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h.Set("Cache-Control", f.cache)
		h.Set("Content-Type", "text/javascript; charset=utf-8")
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cross-Origin-Resource-Policy", "cross-origin")
		h.Set("ETag", f.etag)
		// If-None-Match (304), HEAD and Content-Length, as net/http does them.
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
	})
}
