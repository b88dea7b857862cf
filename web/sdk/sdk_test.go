package sdk_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/tabrelay/tabrelay/web/sdk"
)

func TestServesTheModule(t *testing.T) {
	srv := httptest.NewServer(sdk.Handler())
	defer srv.Close()
	get := func(path string, header ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	const year, hour = "public, max-age=31536000, immutable", "public, max-age=3600"
	for _, c := range []struct {
		path, cache, etag string
		body              []byte
	}{
		{sdk.VersionPath(), year, sdk.ETag(), sdk.Module()},
		{sdk.MajorPath, hour, sdk.ETag(), sdk.Module()},
		{sdk.UIVersionPath(), year, sdk.UIETag(), sdk.UIModule()},
		{sdk.UIMajorPath, hour, sdk.UIETag(), sdk.UIModule()},
	} {
		path := c.path
		resp := get(path, "Origin", "https://app.example.com")
		h := resp.Header
		if resp.StatusCode != http.StatusOK || h.Get("Content-Type") != "text/javascript; charset=utf-8" ||
			h.Get("Cache-Control") != c.cache || h.Get("Access-Control-Allow-Origin") != "*" || h.Get("ETag") != c.etag ||
			resp.ContentLength != int64(len(c.body)) {
			t.Fatalf("GET %s: %d %v", path, resp.StatusCode, h)
		}
		if resp := get(path, "If-None-Match", c.etag); resp.StatusCode != http.StatusNotModified {
			t.Fatalf("GET %s with its ETag: %d, want 304", path, resp.StatusCode)
		}
	}
	for _, path := range []string{"/sdk/", "/sdk/v1/", "/sdk/v1/tabrelay.d.ts", "/sdk/0.0.0/tabrelay.js", "/sdk/0.0.0/tabrelay-ui.js", "/sdk/v1/tabrelay-ui.d.ts", "/sdk/v1/../package.json"} {
		if resp := get(path); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("GET %s: %d, want 404", path, resp.StatusCode)
		}
	}
}

// The README's <script> pins the module being served: its path and its
// integrity change with every build, and the README with them.
func TestTheReadmePinsThisBuild(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{sdk.VersionPath(), sdk.Integrity(), sdk.UIVersionPath(), sdk.UIIntegrity()} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("web/sdk/README.md does not name %s: update its <script> tag", want)
		}
	}
}
