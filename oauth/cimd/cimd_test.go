package cimd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/internal/clock"
	"github.com/tabrelay/tabrelay/internal/testwait"
)

// docServer is a real https server on 127.0.0.1 that counts requests.
type docServer struct {
	*httptest.Server
	requests atomic.Int64
}

func newDocServer(t *testing.T, h http.HandlerFunc) *docServer {
	t.Helper()
	s := &docServer{}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// fetcher returns a fetcher that trusts the server's certificate.
func (s *docServer) fetcher(opts Options) *Fetcher {
	opts.RootCAs = s.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	return NewFetcher(opts)
}

func (s *docServer) id() string { return s.URL + "/client.json" }

// selfURL is the URL a request was made to, as the client_id of the
// document served there.
func selfURL(r *http.Request) string { return "https://" + r.Host + r.URL.Path }

func goodDoc(id string) map[string]any {
	return map[string]any{
		"client_id":                  id,
		"client_name":                "  Test Client ",
		"redirect_uris":              []any{"https://client.example/cb", "http://127.0.0.1/cb", "http://[::1]:8080/cb", "http://localhost/cb"},
		"client_uri":                 "https://client.example/",
		"logo_uri":                   "http://client.example/logo.png",
		"grant_types":                []any{"authorization_code", "refresh_token"},
		"token_endpoint_auth_method": "none",
	}
}

// docHandler serves the good document, changed by edit, with headers.
func docHandler(edit func(doc map[string]any), headers map[string]string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		doc := goodDoc(selfURL(r))
		if edit != nil {
			edit(doc)
		}
		w.Header().Set("Content-Type", "application/json")
		for k, v := range headers {
			w.Header().Set(k, v)
		}
		json.NewEncoder(w).Encode(doc)
	}
}

func rawHandler(contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Write([]byte(body))
	}
}

func TestFetchAccepts(t *testing.T) {
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON;charset=UTF-8", "application/client-metadata+json"} {
		t.Run(ct, func(t *testing.T) {
			srv := newDocServer(t, docHandler(nil, map[string]string{"Content-Type": ct}))
			f := srv.fetcher(Options{AllowLoopback: true})
			md, err := f.Fetch(t.Context(), srv.id())
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			if md.ClientID != srv.id() || md.ClientName != "Test Client" || len(md.RedirectURIs) != 4 ||
				md.ClientURI != "https://client.example/" || md.LogoURI != "" {
				t.Errorf("metadata = %+v", md)
			}
			md.RedirectURIs[0] = "https://evil.example/cb"
			again, err := f.Fetch(t.Context(), srv.id())
			if err != nil {
				t.Fatalf("second Fetch: %v", err)
			}
			if got := srv.requests.Load(); got != 1 {
				t.Errorf("requests = %d, want 1 (the second Fetch is served from the cache)", got)
			}
			if again.RedirectURIs[0] != "https://client.example/cb" {
				t.Errorf("a caller's change reached the cache: %v", again.RedirectURIs)
			}
		})
	}
}

func TestFetchCacheTTL(t *testing.T) {
	start := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	date := start.Format(http.TimeFormat)
	cases := []struct {
		name    string
		headers map[string]string
		advance time.Duration
		want    int64 // requests after a Fetch at start and one at start+advance
	}{
		{"max-age kept", map[string]string{"Cache-Control": "public, max-age=600"}, 599 * time.Second, 1},
		{"max-age over", map[string]string{"Cache-Control": "max-age=600"}, 601 * time.Second, 2},
		{"max-age less Age", map[string]string{"Cache-Control": "max-age=600", "Age": "300"}, 301 * time.Second, 2},
		{"max-age raised to MinTTL", map[string]string{"Cache-Control": "max-age=5"}, 59 * time.Second, 1},
		{"max-age lowered to MaxTTL", map[string]string{"Cache-Control": "max-age=99999999999"}, 24*time.Hour + time.Second, 2},
		{"no-cache kept MinTTL", map[string]string{"Cache-Control": "no-cache"}, 59 * time.Second, 1},
		{"no-store not cached", map[string]string{"Cache-Control": "no-store, max-age=600"}, 0, 2},
		{"no headers kept MinTTL", nil, 59 * time.Second, 1},
		{"no headers over MinTTL", nil, 61 * time.Second, 2},
		{"Expires kept", map[string]string{"Date": date, "Expires": start.Add(10 * time.Minute).Format(http.TimeFormat)}, 9 * time.Minute, 1},
		{"Expires over", map[string]string{"Date": date, "Expires": start.Add(10 * time.Minute).Format(http.TimeFormat)}, 11 * time.Minute, 2},
		{"max-age wins over Expires", map[string]string{"Cache-Control": "max-age=120", "Date": date, "Expires": start.Add(time.Hour).Format(http.TimeFormat)}, 121 * time.Second, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newDocServer(t, docHandler(nil, tc.headers))
			clk := clock.NewFake(start)
			f := srv.fetcher(Options{AllowLoopback: true, Now: clk.Now})
			if _, err := f.Fetch(t.Context(), srv.id()); err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			clk.Advance(tc.advance)
			if _, err := f.Fetch(t.Context(), srv.id()); err != nil {
				t.Fatalf("second Fetch: %v", err)
			}
			if got := srv.requests.Load(); got != tc.want {
				t.Errorf("requests = %d, want %d", got, tc.want)
			}
		})
	}
}

// hugeDoc is a valid document padded with whitespace past 64 KiB: only its
// size is wrong.
func hugeDoc(chunked bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		doc, _ := json.Marshal(goodDoc(selfURL(r)))
		body := append(doc, strings.Repeat(" ", 64<<10)...)
		w.Header().Set("Content-Type", "application/json")
		if !chunked {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.Write(body)
			return
		}
		for len(body) > 0 {
			n := min(len(body), 4096)
			w.Write(body[:n])
			w.(http.Flusher).Flush()
			body = body[n:]
		}
	}
}

func setField(k string, v any) func(map[string]any) { return func(d map[string]any) { d[k] = v } }

func delField(k string) func(map[string]any) { return func(d map[string]any) { delete(d, k) } }

// refusals are documents and servers Fetch must refuse, with the kind
// of error, a part of its sentence and the requests the server should see.
var refusals = []struct {
	name     string
	handler  http.HandlerFunc
	id       func(s *docServer) string // default: s.id()
	opts     Options                   // AllowLoopback is added unless denyLoop
	denyLoop bool
	kind     error
	reason   string
	requests int64
}{
	{name: "http URL", id: func(s *docServer) string { return strings.Replace(s.id(), "https:", "http:", 1) },
		kind: ErrBadURL, reason: "not an https URL"},
	{name: "loopback address without AllowLoopback", denyLoop: true,
		kind: ErrForbiddenAddress, reason: "its address 127.0.0.1 is loopback"},
	{name: "localhost name without AllowLoopback", denyLoop: true,
		id: func(s *docServer) string {
			u, _ := url.Parse(s.id())
			return "https://localhost:" + u.Port() + u.Path
		},
		kind: ErrForbiddenAddress, reason: "is loopback"},
	{name: "redirect not followed", handler: func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/client.json" {
			http.Redirect(w, r, "/moved.json", http.StatusFound)
			return
		}
		docHandler(nil, nil)(w, r)
	}, kind: ErrFetch, reason: "redirects are not followed", requests: 1},
	{name: "not found", handler: http.NotFound, kind: ErrFetch, reason: "HTTP status 404", requests: 1},
	{name: "over 64 KiB by Content-Length", handler: hugeDoc(false), kind: ErrFetch, reason: "larger than 65536 bytes", requests: 1},
	{name: "over 64 KiB chunked", handler: hugeDoc(true), kind: ErrFetch, reason: "larger than 65536 bytes", requests: 1},
	{name: "not JSON", handler: rawHandler("application/json", "SECRET-BODY <html>"), kind: ErrInvalid, reason: "not a JSON object", requests: 1},
	{name: "JSON array", handler: rawHandler("application/json", "[]"), kind: ErrInvalid, reason: "not a JSON object", requests: 1},
	{name: "JSON null", handler: rawHandler("application/json", "null"), kind: ErrInvalid, reason: "not a JSON object", requests: 1},
	{name: "HTML content type", handler: docHandler(nil, map[string]string{"Content-Type": "text/html"}), kind: ErrFetch, reason: "did not answer with JSON", requests: 1},
	{name: "client_id mismatch", handler: docHandler(setField("client_id", "https://other.example/client.json"), nil),
		kind: ErrInvalid, reason: "client_id is not the URL", requests: 1},
	{name: "client_id under another case", handler: docHandler(func(d map[string]any) { d["Client_ID"] = d["client_id"]; delete(d, "client_id") }, nil),
		kind: ErrInvalid, reason: "client_id is not the URL", requests: 1},
	{name: "missing client_name", handler: docHandler(delField("client_name"), nil), kind: ErrInvalid, reason: "client_name is missing", requests: 1},
	{name: "blank client_name", handler: docHandler(setField("client_name", " \t "), nil), kind: ErrInvalid, reason: "client_name is missing", requests: 1},
	{name: "long client_name", handler: docHandler(setField("client_name", strings.Repeat("é", 65)), nil), kind: ErrInvalid, reason: "longer than 64", requests: 1},
	{name: "client_name with bidi override", handler: docHandler(setField("client_name", "Good\u202eliA"), nil), kind: ErrInvalid, reason: "control or invisible formatting characters", requests: 1},
	{name: "client_name with a zero-width space", handler: docHandler(setField("client_name", "Cla\u200bude"), nil), kind: ErrInvalid, reason: "invisible formatting characters", requests: 1},
	{name: "client_name with a zero-width non-joiner", handler: docHandler(setField("client_name", "Claude\u200c"), nil), kind: ErrInvalid, reason: "invisible formatting characters", requests: 1},
	{name: "client_name not a string", handler: docHandler(setField("client_name", 42), nil), kind: ErrInvalid, reason: "client_name field has the wrong type", requests: 1},
	{name: "no redirect_uris", handler: docHandler(delField("redirect_uris"), nil), kind: ErrInvalid, reason: "no redirect_uris", requests: 1},
	{name: "javascript redirect URI", handler: docHandler(setField("redirect_uris", []string{"https://client.example/cb", "javascript:alert(1)"}), nil),
		kind: ErrInvalid, reason: "redirect URI number 2 uses the javascript: scheme", requests: 1},
	{name: "data redirect URI", handler: docHandler(setField("redirect_uris", []string{"data:text/html,hi"}), nil),
		kind: ErrInvalid, reason: "data: scheme", requests: 1},
	{name: "http redirect URI not on loopback", handler: docHandler(setField("redirect_uris", []string{"http://client.example/cb"}), nil),
		kind: ErrInvalid, reason: "neither https nor http on a loopback address", requests: 1},
	{name: "custom scheme redirect URI", handler: docHandler(setField("redirect_uris", []string{"com.example.app://cb"}), nil),
		kind: ErrInvalid, reason: "neither https nor http on a loopback address", requests: 1},
	{name: "redirect URI with fragment", handler: docHandler(setField("redirect_uris", []string{"https://client.example/cb#x"}), nil),
		kind: ErrInvalid, reason: "has a fragment", requests: 1},
	{name: "redirect URI over 2 KiB", handler: docHandler(setField("redirect_uris", []string{"https://client.example/cb?" + strings.Repeat("a", 2048)}), nil),
		kind: ErrInvalid, reason: "redirect URI number 1 is longer than 2048 bytes", requests: 1},
	{name: "private_key_jwt", handler: docHandler(setField("token_endpoint_auth_method", "private_key_jwt"), nil),
		kind: ErrInvalid, reason: `authentication "private_key_jwt", but the relay accepts only public clients`, requests: 1},
	{name: "unknown auth method", handler: docHandler(setField("token_endpoint_auth_method", "SECRET-BODY"), nil),
		kind: ErrInvalid, reason: "unknown token endpoint authentication method", requests: 1},
	{name: "slower than Timeout", opts: Options{Timeout: 200 * time.Millisecond},
		handler: func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}, kind: ErrFetch, reason: "did not answer within 200ms", requests: 1},
}

func TestFetchRefuses(t *testing.T) {
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.handler
			if h == nil {
				h = docHandler(nil, nil)
			}
			srv := newDocServer(t, h)
			opts := tc.opts
			opts.AllowLoopback = !tc.denyLoop
			f := srv.fetcher(opts)
			id := srv.id()
			if tc.id != nil {
				id = tc.id(srv)
			}
			start := time.Now()
			_, err := f.Fetch(t.Context(), id)
			var cerr *Error
			if !errors.As(err, &cerr) || !errors.Is(err, tc.kind) {
				t.Fatalf("Fetch error = %v (%T), want a *Error of kind %v", err, err, tc.kind)
			}
			t.Logf("refused: %v", err)
			if !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("message %q does not say %q", err, tc.reason)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("message %q quotes the document", err)
			}
			if got := srv.requests.Load(); got != tc.requests {
				t.Errorf("requests = %d, want %d", got, tc.requests)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("Fetch took %v", took)
			}
		})
	}
}

func TestNegativeCache(t *testing.T) {
	var broken atomic.Bool
	broken.Store(true)
	good := docHandler(nil, nil)
	srv := newDocServer(t, func(w http.ResponseWriter, r *http.Request) {
		if broken.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		good(w, r)
	})
	clk := clock.NewFake(time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC))
	f := srv.fetcher(Options{AllowLoopback: true, Now: clk.Now})
	steps := []struct {
		name     string
		advance  time.Duration
		wantErr  bool
		requests int64
	}{
		{"first failure", 0, true, 1},
		{"failure remembered", 9 * time.Second, true, 1},
		{"retried after 10s", 2 * time.Second, false, 2},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			clk.Advance(st.advance)
			_, err := f.Fetch(t.Context(), srv.id())
			broken.Store(false) // mended at once; the failure is remembered for 10s
			if (err != nil) != st.wantErr {
				t.Errorf("Fetch error = %v, want error %v", err, st.wantErr)
			}
			if got := srv.requests.Load(); got != st.requests {
				t.Errorf("requests = %d, want %d", got, st.requests)
			}
		})
	}
}

func TestConcurrentFetchMakesOneRequest(t *testing.T) {
	release := make(chan struct{})
	good := docHandler(nil, nil)
	srv := newDocServer(t, func(w http.ResponseWriter, r *http.Request) {
		<-release
		good(w, r)
	})
	f := srv.fetcher(Options{AllowLoopback: true})
	const callers = 8
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			_, err := f.Fetch(t.Context(), srv.id())
			errs <- err
		})
	}
	// Hold the answer until every caller waits on the one fetch.
	testwait.Eventually(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		c := f.calls[srv.id()]
		return c != nil && c.callers == callers
	}, "%d callers joining the one fetch", callers)
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Fetch: %v", err)
		}
	}
	if got := srv.requests.Load(); got != 1 {
		t.Errorf("requests = %d, want 1", got)
	}
}

func TestFetchCallerGivesUp(t *testing.T) {
	release := make(chan struct{})
	good := docHandler(nil, nil)
	srv := newDocServer(t, func(w http.ResponseWriter, r *http.Request) {
		<-release
		good(w, r)
	})
	f := srv.fetcher(Options{AllowLoopback: true})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := f.Fetch(ctx, srv.id()); !errors.Is(err, context.Canceled) || !errors.Is(err, ErrFetch) {
		t.Errorf("Fetch with a cancelled context = %v, want a cancelled ErrFetch", err)
	}
	close(release)
	// The fetch went on for others: this caller joins it or finds it cached.
	if _, err := f.Fetch(t.Context(), srv.id()); err != nil {
		t.Errorf("Fetch: %v", err)
	}
	if got := srv.requests.Load(); got != 1 {
		t.Errorf("requests = %d, want 1", got)
	}
}

// dialCases are addresses the dial check refuses or lets through.
var dialCases = []struct {
	addr          string
	allowLoopback bool
	refused       bool
}{
	{"10.1.2.3", false, true},
	{"172.16.0.1", false, true},
	{"192.168.1.1", false, true},
	{"169.254.169.254", false, true},
	{"100.64.0.1", false, true},
	{"224.0.0.1", false, true},
	{"0.0.0.0", false, true},
	{"0.1.2.3", false, true},
	{"255.255.255.255", false, true},
	{"192.0.2.1", false, true},
	{"198.18.0.1", false, true},
	{"127.0.0.1", false, true},
	{"::1", false, true},
	{"::", false, true},
	{"fe80::1", false, true},
	{"fe80::1%eth0", false, true},
	{"fc00::1", false, true},
	{"fd12:3456::1", false, true},
	{"ff02::1", false, true},
	{"::ffff:10.0.0.1", false, true},
	{"::ffff:127.0.0.1", false, true},
	{"64:ff9b::a00:1", false, true},    // NAT64 of 10.0.0.1
	{"2002:a9fe:a9fe::1", false, true}, // 6to4 of 169.254.169.254
	{"2001:db8::1", false, true},
	{"2001::1", false, true},
	{"8.8.8.8", false, false},
	{"1.1.1.1", false, false},
	{"2606:4700::1", false, false},
	{"::ffff:8.8.8.8", false, false},
	{"64:ff9b::808:808", false, false},
	{"127.0.0.1", true, false},
	{"127.1.2.3", true, false},
	{"::1", true, false},
	{"::ffff:127.0.0.1", true, false},
	{"10.1.2.3", true, true},
	{"169.254.169.254", true, true},
	{"fe80::1", true, true},
	{"0.0.0.0", true, true},
}

func TestDialCheck(t *testing.T) {
	for _, tc := range dialCases {
		t.Run(fmt.Sprintf("%s/loopback=%v", tc.addr, tc.allowLoopback), func(t *testing.T) {
			control := dialControl(tc.allowLoopback)
			err := control("tcp", net.JoinHostPort(tc.addr, "443"), nil)
			if refused := err != nil; refused != tc.refused {
				t.Fatalf("control(%s) = %v, want refused %v", tc.addr, err, tc.refused)
			}
			if err != nil && !errors.Is(err, ErrForbiddenAddress) {
				t.Errorf("error %v is not ErrForbiddenAddress", err)
			}
			if err := checkAddr(netip.MustParseAddr(tc.addr), tc.allowLoopback); (err != nil) != tc.refused {
				t.Errorf("checkAddr(%s) = %v, want refused %v", tc.addr, err, tc.refused)
			}
		})
	}
	if err := dialControl(false)("tcp", "not-an-address", nil); err == nil {
		t.Errorf("an address that does not parse was allowed")
	}
}

func TestIsClientID(t *testing.T) {
	cases := []struct {
		id   string
		want bool
	}{
		{"https://client.example/oauth/metadata.json", true},
		{"https://client.example:8443/m?v=1", true},
		{"https://127.0.0.1:1234/client.json", true},
		{"http://client.example/m", false},
		{"HTTPS://client.example/m", false},
		{"https://client.example", false},
		{"https://client.example/", false},
		{"https://client.example/m#frag", false},
		{"https://client.example/m#", false},
		{"https://user:pass@client.example/m", false},
		{"https://user@client.example/m", false},
		{"https:///m", false},
		{"https://client.example/a/../m", false},
		{"https://client.example/./m", false},
		{"https://client.example/%2e%2e/m", false},
		{"https://client.example/a b", false},
		{"https://client.example\\@evil.example/m", false},
		{"client-123", false},
		{"", false},
		{"https://client.example/" + strings.Repeat("a", 3000), false},
	}
	for _, tc := range cases {
		t.Run(tc.id, func(t *testing.T) {
			if got := IsClientID(tc.id); got != tc.want {
				t.Errorf("IsClientID(%q) = %v, want %v", tc.id, got, tc.want)
			}
		})
	}
}

func TestCacheIsBounded(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC))
	f := NewFetcher(Options{Now: clk.Now})
	key := func(i int) string { return fmt.Sprintf("https://c%d.example/m", i) }
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range maxEntries + 1 {
		f.store(key(i), &entry{expires: clk.Now().Add(time.Hour)})
	}
	if len(f.cache) != maxEntries {
		t.Errorf("cache holds %d entries, want %d", len(f.cache), maxEntries)
	}
	if _, ok := f.cache[key(0)]; ok {
		t.Errorf("the oldest entry was kept")
	}
	if _, ok := f.cache[key(maxEntries)]; !ok {
		t.Errorf("the newest entry was not stored")
	}
}
