package sdk_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"flag"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"

	"github.com/tabrelay/tabrelay/web/sdk"
)

// get is a GET of srv's path with the header pairs, the body read whole
// and not decoded (the client asks for no encoding of its own).
func get(t *testing.T, srv *httptest.Server, path string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func TestServesTheModule(t *testing.T) {
	srv := httptest.NewServer(sdk.Handler())
	defer srv.Close()
	const year, hour = "public, max-age=31536000, immutable", "public, max-age=3600"
	const js, css = "text/javascript; charset=utf-8", "text/css; charset=utf-8"
	for _, c := range []struct {
		path, cache, ctype, etag string
		body                     []byte
	}{
		{sdk.VersionPath(), year, js, sdk.ETag(), sdk.Module()},
		{sdk.MajorPath, hour, js, sdk.ETag(), sdk.Module()},
		{sdk.UIVersionPath(), year, js, sdk.UIETag(), sdk.UIModule()},
		{sdk.UIMajorPath, hour, js, sdk.UIETag(), sdk.UIModule()},
		{sdk.UIStylesheetVersionPath(), year, css, sdk.ETagOf(sdk.UIStylesheet(), ""), sdk.UIStylesheet()},
		{sdk.UIStylesheetMajorPath, hour, css, sdk.ETagOf(sdk.UIStylesheet(), ""), sdk.UIStylesheet()},
		{sdk.UIGermanVersionPath(), year, js, sdk.ETagOf(sdk.UIGerman(), ""), sdk.UIGerman()},
		{sdk.UIGermanMajorPath, hour, js, sdk.ETagOf(sdk.UIGerman(), ""), sdk.UIGerman()},
	} {
		path := c.path
		resp, _ := get(t, srv, path, "Origin", "https://app.example.com")
		h := resp.Header
		if resp.StatusCode != http.StatusOK || h.Get("Content-Type") != c.ctype ||
			h.Get("Cache-Control") != c.cache || h.Get("Access-Control-Allow-Origin") != "*" || h.Get("ETag") != c.etag ||
			resp.ContentLength != int64(len(c.body)) {
			t.Fatalf("GET %s: %d %v", path, resp.StatusCode, h)
		}
		if resp, _ := get(t, srv, path, "If-None-Match", c.etag); resp.StatusCode != http.StatusNotModified {
			t.Fatalf("GET %s with its ETag: %d, want 304", path, resp.StatusCode)
		}
	}
	for _, path := range []string{"/sdk/", "/sdk/v1/", "/sdk/v1/tabrelay.d.ts", "/sdk/0.0.0/tabrelay.js", "/sdk/0.0.0/tabrelay-ui.js", "/sdk/v1/tabrelay-ui.d.ts", "/sdk/v1/../package.json"} {
		if resp, _ := get(t, srv, path); resp.StatusCode != http.StatusNotFound {
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

// A browser that accepts br or gzip gets the file so encoded (br first),
// each encoding under an ETag of its own that revalidates only that
// encoding, and every answer says it varies with Accept-Encoding.
func TestServesCompressed(t *testing.T) {
	srv := httptest.NewServer(sdk.Handler())
	defer srv.Close()
	for path, want := range map[string][]byte{sdk.MajorPath: sdk.Module(), sdk.UIVersionPath(): sdk.UIModule(), sdk.UIStylesheetMajorPath: sdk.UIStylesheet()} {
		etags := map[string]string{}
		for _, c := range []struct{ accept, coding string }{
			{"", ""},
			{"identity", ""},
			{"gzip", "gzip"},
			{"gzip, deflate, br, zstd", "br"},
			{"br;q=0, gzip;q=0.5", "gzip"},
			{"BR", "br"},
			{"*", "br"},
			{"*, br;q=0", "gzip"},
			{"gzip;q=0, br;q=0", ""},
			{"deflate", ""},
		} {
			t.Run(path+" "+c.accept, func(t *testing.T) { checkEncoded(t, srv, path, want, c.accept, c.coding, etags) })
		}
		if len(etags) != 3 {
			t.Fatalf("%s: ETags %v, want one per encoding", path, etags)
		}
	}
}

// checkEncoded GETs path accepting accept and checks that it comes in
// coding, decodes to want, has the coding's own ETag (the one other
// requests of that coding had, in etags, which it adds to) and
// revalidates with it alone.
func checkEncoded(t *testing.T, srv *httptest.Server, path string, want []byte, accept, coding string, etags map[string]string) {
	decode := map[string]func([]byte) ([]byte, error){
		"": func(b []byte) ([]byte, error) { return b, nil },
		"gzip": func(b []byte) ([]byte, error) {
			r, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return nil, err
			}
			return io.ReadAll(r)
		},
		"br": func(b []byte) ([]byte, error) { return io.ReadAll(brotli.NewReader(bytes.NewReader(b))) },
	}
	resp, body := get(t, srv, path, "Accept-Encoding", accept)
	h := resp.Header
	if resp.StatusCode != http.StatusOK || h.Get("Content-Encoding") != coding || h.Get("Vary") != "Accept-Encoding" {
		t.Fatalf("%d, Content-Encoding %q, Vary %q; want 200, %q, Accept-Encoding", resp.StatusCode, h.Get("Content-Encoding"), h.Get("Vary"), coding)
	}
	got, err := decode[coding](body)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the body does not decode to the file (%v)", err)
	}
	if coding != "" && len(body) >= len(want) {
		t.Fatalf("%s: %d bytes, not smaller than the file's %d", coding, len(body), len(want))
	}
	etag := h.Get("ETag")
	if etag != sdk.ETagOf(want, coding) {
		t.Fatalf("ETag %s, want %s", etag, sdk.ETagOf(want, coding))
	}
	if prev, seen := etags[coding]; seen && prev != etag {
		t.Fatalf("ETag %s, another request of %q got %s", etag, coding, prev)
	}
	etags[coding] = etag
	if resp, _ := get(t, srv, path, "Accept-Encoding", accept, "If-None-Match", etag); resp.StatusCode != http.StatusNotModified {
		t.Fatalf("revalidated with its own ETag: %d, want 304", resp.StatusCode)
	}
	for other, tag := range etags {
		if other == coding {
			continue
		}
		if resp, _ := get(t, srv, path, "Accept-Encoding", accept, "If-None-Match", tag); resp.StatusCode != http.StatusOK {
			t.Fatalf("revalidated with the %q encoding's ETag: %d, want 200 (another encoding's bytes)", other, resp.StatusCode)
		}
	}
}

// The package's version is a semantic version (the /sdk/<version>/ paths
// are made of it) and the CHANGELOG says what it brought.
func TestTheVersionIsSemanticAndInTheChangelog(t *testing.T) {
	semver := regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?$`)
	if !semver.MatchString(sdk.Version()) {
		t.Fatalf("package.json's version %q is not a semantic version", sdk.Version())
	}
	changelog, err := os.ReadFile("CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(changelog), "\n## "+sdk.Version()+"\n") {
		t.Fatalf("CHANGELOG.md has no section \"## %s\"", sdk.Version())
	}
}

// released.json holds, for each version whose bytes a relay has served
// under /sdk/<version>/ (immutable, and pinned by apps' integrity
// attributes), the sha384 of each file served there, by name.
const releasedFile = "released.json"

var release = flag.Bool("release", false, "record this version's served files in released.json (as it lands)")

// TestAReleasedVersionKeepsItsBytes: once a version is recorded as
// released, a build whose immutable files (as Handler serves them) differ
// must carry another version (package.json and CHANGELOG.md): a page that
// pinned the old bytes' hash would stop loading them. With -release it
// records this version, and refuses to record other bytes under a version
// recorded already.
func TestAReleasedVersionKeepsItsBytes(t *testing.T) {
	released := map[string]map[string]string{}
	raw, err := os.ReadFile(releasedFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &released); err != nil {
		t.Fatalf("%s: %v", releasedFile, err)
	}
	srv := httptest.NewServer(sdk.Handler())
	defer srv.Close()
	now := map[string]string{}
	for _, path := range sdk.ImmutablePaths() {
		resp, body := get(t, srv, path)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "" {
			t.Fatalf("GET %s: %d %q", path, resp.StatusCode, resp.Header.Get("Content-Encoding"))
		}
		sum := sha512.Sum384(body)
		now[path[strings.LastIndexByte(path, '/')+1:]] = "sha384-" + base64.StdEncoding.EncodeToString(sum[:])
	}
	was, recorded := released[sdk.Version()]
	if recorded && !maps.Equal(was, now) {
		t.Fatalf("the files under /sdk/%s/ are not the ones %s records for it: give this build a version of its own in package.json and CHANGELOG.md", sdk.Version(), releasedFile)
	}
	if !*release || recorded {
		return
	}
	released[sdk.Version()] = now
	out, err := json.MarshalIndent(released, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(releasedFile, append(out, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
