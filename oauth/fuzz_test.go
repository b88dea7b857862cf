package oauth_test

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// The fuzz tests of the authorization endpoints send what anyone on the
// internet may send: each answer has a status of the endpoint's own
// (never 5xx, never a panic), and each JSON error is an RFC 6749 error
// object whose description a client may show as it is.

// fuzzAddr numbers the fuzzed requests' addresses, so that the limits per
// address do not turn every input after the first few into a 429.
var fuzzAddr atomic.Uint32

func (h *harness) serve(req *http.Request) *httptest.ResponseRecorder {
	n := fuzzAddr.Add(1)
	req.RemoteAddr = fmt.Sprintf("10.%d.%d.%d:4000", byte(n>>16), byte(n>>8), byte(n))
	w := httptest.NewRecorder()
	h.srv.Config.Handler.ServeHTTP(w, req)
	return w
}

// oauthErrorCodes are the error codes the token, registration and
// revocation endpoints may answer with.
var oauthErrorCodes = map[string]bool{
	"invalid_request": true, "invalid_client": true, "invalid_grant": true, "unauthorized_client": true,
	"unsupported_grant_type": true, "invalid_scope": true, "invalid_target": true, "slow_down": true,
	"invalid_client_metadata": true, "invalid_redirect_uri": true,
}

// checkOAuthError fails unless w is an RFC 6749 error object with a known
// code and a description of the characters RFC 6749 §5.2 allows.
func checkOAuthError(t *testing.T, w *httptest.ResponseRecorder, input any) {
	t.Helper()
	var e struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if !isJSON(w.Header()) || json.Unmarshal(w.Body.Bytes(), &e) != nil || !oauthErrorCodes[e.Error] {
		t.Fatalf("%d for %q is not an error object: %q", w.Code, input, w.Body.Bytes())
	}
	for _, r := range e.Description {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			t.Fatalf("error_description %q for %q has %q", e.Description, input, r)
		}
	}
	if w.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("an error of the token endpoints without Cache-Control: no-store")
	}
}

func FuzzToken(f *testing.F) {
	for _, seed := range []string{
		"grant_type=authorization_code&client_id=client_x&code=tac_x&redirect_uri=https%3A%2F%2Fclient.example%2Fcb&code_verifier=abc",
		"grant_type=refresh_token&client_id=client_x&refresh_token=trr_x",
		"grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange&client_id=c&subject_token=tra_x&subject_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Aaccess_token&scope=counter%3Aget",
		"grant_type=refresh_token&client_id=c&resource=https%3A%2F%2Fevil.example",
		"client_id=%ZZ", "grant_type=password&client_id=c&username=a&password=b", "",
		"grant_type=authorization_code&grant_type=refresh_token&client_id=a&client_id=b",
	} {
		f.Add(seed, "application/x-www-form-urlencoded", "")
	}
	f.Add("grant_type=refresh_token", "multipart/form-data; boundary=x", "client_id=c")
	h := newHarness(f)
	f.Fuzz(func(t *testing.T, body, contentType, query string) {
		req := httptest.NewRequest(http.MethodPost, h.srv.URL+"/token?"+url.PathEscape(query), strings.NewReader(body))
		if validHeaderValue(contentType) {
			req.Header.Set("Content-Type", contentType)
		}
		w := h.serve(req)
		if w.Code == http.StatusOK {
			t.Fatalf("tokens for a made-up form %q: %s", body, w.Body.Bytes())
		}
		if w.Code != http.StatusBadRequest && w.Code != http.StatusUnauthorized {
			t.Fatalf("status %d for %q", w.Code, body)
		}
		checkOAuthError(t, w, body)
	})
}

func FuzzRevoke(f *testing.F) {
	for _, seed := range []string{"token=trr_x&client_id=c", "token=tra_x", "token=", "token=%", "token=x&token_type_hint=refresh_token", ""} {
		f.Add(seed, "application/x-www-form-urlencoded")
	}
	h := newHarness(f)
	f.Fuzz(func(t *testing.T, body, contentType string) {
		req := httptest.NewRequest(http.MethodPost, h.srv.URL+"/revoke", strings.NewReader(body))
		if validHeaderValue(contentType) {
			req.Header.Set("Content-Type", contentType)
		}
		w := h.serve(req)
		switch w.Code {
		case http.StatusOK: // RFC 7009 §2.2: an unknown token is no error
			if w.Body.Len() != 0 {
				t.Fatalf("a revocation answered with a body: %q", w.Body.Bytes())
			}
		case http.StatusBadRequest:
			checkOAuthError(t, w, body)
		default:
			t.Fatalf("status %d for %q", w.Code, body)
		}
	})
}

func FuzzRegister(f *testing.F) {
	for _, seed := range []string{
		`{"client_name":"Fuzz","redirect_uris":["https://client.example/cb"]}`,
		`{"client_name":"Fuzz","redirect_uris":["http://127.0.0.1/cb","http://[::1]:8080/x"],"token_endpoint_auth_method":"none","grant_types":["authorization_code"]}`,
		`{"client_name":"\u202eevil","redirect_uris":["https://a.example"]}`,
		`{"client_name":"x","redirect_uris":["javascript:alert(1)"]}`,
		`{"client_name":"x","redirect_uris":["https://a.example/#frag"]}`,
		`{"client_name":"x","redirect_uris":"https://a.example"}`,
		`{"client_name":"x","redirect_uris":["https://a.example"]} {}`, `[]`, `null`, ``,
		`{"client_name":"x","redirect_uris":["http://localhost.evil.example/cb"]}`,
	} {
		f.Add(seed)
	}
	h := newHarness(f)
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest(http.MethodPost, h.srv.URL+"/register", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := h.serve(req)
		switch w.Code {
		case http.StatusCreated:
			var out struct {
				ClientID     string   `json:"client_id"`
				Name         string   `json:"client_name"`
				RedirectURIs []string `json:"redirect_uris"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || out.ClientID == "" || out.Name == "" || len(out.RedirectURIs) == 0 {
				t.Fatalf("a registration answered %q", w.Body.Bytes())
			}
			for _, r := range out.Name {
				if r < 0x20 || r == 0x7f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 {
					t.Fatalf("a client name with %q registered", r)
				}
			}
			for _, raw := range out.RedirectURIs {
				u, err := url.Parse(raw)
				ip, ipErr := netip.ParseAddr(u.Hostname())
				loopback := err == nil && u.Scheme == "http" && (ipErr == nil && ip.Unmap().IsLoopback() || strings.EqualFold(u.Hostname(), "localhost"))
				if err != nil || u.Fragment != "" || (u.Scheme != "https" && !loopback) || u.Host == "" {
					t.Fatalf("the redirect URI %q registered from %q", raw, body)
				}
			}
		case http.StatusBadRequest, http.StatusTooManyRequests:
			checkOAuthError(t, w, body)
		default:
			t.Fatalf("status %d for %q", w.Code, body)
		}
	})
}

// FuzzAuthorize sends arbitrary authorization requests for a registered
// client: the answer is a page, never a redirect (errors link back only to
// the redirect URI the client registered), and a link back carries iss.
func FuzzAuthorize(f *testing.F) {
	h := newHarness(f)
	client := h.register("Fuzz Client", testCB, "http://127.0.0.1/cb")
	_, challenge := pkce()
	good := strings.TrimPrefix(authorizeURL(h.srv.URL, client, testCB, challenge, "st"), h.srv.URL+"/authorize?")
	for _, seed := range []string{
		good, good + "&scope=counter%3Aget+dataset+openid", good + "&resource=https%3A%2F%2Fevil.example",
		strings.Replace(good, "S256", "plain", 1), strings.Replace(good, "response_type=code", "response_type=token", 1),
		strings.Replace(good, url.QueryEscape(testCB), url.QueryEscape("https://client.example/cb/../evil"), 1),
		strings.Replace(good, url.QueryEscape(testCB), url.QueryEscape("http://127.0.0.1:9/cb"), 1),
		"client_id=https%3A%2F%2F127.0.0.1%2Fcimd&redirect_uri=https%3A%2F%2Fa", "client_id=%ZZ", "",
	} {
		f.Add(seed, "/authorize")
	}
	f.Add("", "/authorize/status/req_x")
	f.Fuzz(func(t *testing.T, query, path string) {
		if !strings.HasPrefix(path, "/authorize") || strings.ContainsAny(path, "?# \x00") || !validHeaderValue(path) {
			path = "/authorize"
		}
		req, err := http.NewRequest(http.MethodGet, h.srv.URL+path+"?"+query, nil)
		if err != nil {
			return // not a URL any client can send
		}
		w := h.serve(req)
		if loc := w.Header().Get("Location"); w.Code >= 300 && w.Code < 400 || loc != "" {
			// Only the mux's own redirect to the cleaned path
			// (/authorize//x → /authorize/x), on this origin.
			if !strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, "//") || strings.HasPrefix(loc, "/\\") {
				t.Fatalf("status %d (Location %q) for %q", w.Code, loc, query)
			}
			return
		}
		if w.Code >= 500 {
			t.Fatalf("status %d for %q", w.Code, query)
		}
		if strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") && w.Header().Get("Content-Security-Policy") == "" {
			t.Fatalf("a page without a Content-Security-Policy for %q", query)
		}
		if m := backLink.FindStringSubmatch(w.Body.String()); m != nil {
			back, err := url.Parse(html.UnescapeString(m[1]))
			if err != nil || back.Query().Get("iss") != h.srv.URL || back.Query().Get("error") == "" {
				t.Fatalf("the link back %q for %q", m[1], query)
			}
			loopback := back.Scheme == "http" && back.Hostname() == "127.0.0.1" && back.Path == "/cb"
			if base := back.Scheme + "://" + back.Host + back.Path; base != testCB && !loopback {
				t.Fatalf("a link back to %q, which the client did not register (%q)", base, query)
			}
		}
	})
}

func validHeaderValue(v string) bool {
	for _, r := range v {
		if r < 0x20 || r > 0x7e {
			return false
		}
	}
	return true
}
