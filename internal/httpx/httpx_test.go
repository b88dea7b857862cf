package httpx

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestBearer(t *testing.T) {
	for _, c := range []struct {
		name, header, token string
		ok                  bool
	}{
		{"the scheme as RFC 6750 writes it", "Bearer tra_abc", "tra_abc", true},
		{"the scheme in another case", "bEARER tra_abc", "tra_abc", true},
		{"spaces around the token", "Bearer   tra_abc  ", "tra_abc", true},
		{"no header", "", "", false},
		{"the scheme alone", "Bearer", "", false},
		{"the scheme and spaces", "Bearer   ", "", false},
		{"another scheme", "Basic dXNlcjpwdw==", "", false},
		{"a token without a scheme", "tra_abc", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", nil)
			if c.header != "" {
				r.Header.Set("Authorization", c.header)
			}
			if token, ok := Bearer(r); token != c.token || ok != c.ok {
				t.Fatalf("Bearer(%q) = %q, %v; want %q, %v", c.header, token, ok, c.token, c.ok)
			}
		})
	}
}

func TestWriteJSONIsNeverCached(t *testing.T) {
	w := httptest.NewRecorder()
	WriteJSON(w, http.StatusTeapot, map[string]string{"a": "<b>"})
	h := w.Header()
	if w.Code != http.StatusTeapot || h.Get("Content-Type") != "application/json" ||
		h.Get("Cache-Control") != "no-store" || h.Get("Pragma") != "no-cache" {
		t.Fatalf("status %d, headers %v", w.Code, h)
	}
	if got := w.Body.String(); got != `{"a":"\u003cb\u003e"}`+"\n" {
		t.Fatalf("body %q", got)
	}
}
