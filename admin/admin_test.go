package admin

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestDebugCheck: /debug/check answers the node's report with 200 when
// its parts agree, 409 when not, 503 when placement cannot be read; no
// token needed.
func TestDebugCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ok     bool
		err    error
		status int
	}{
		{"agree", true, nil, http.StatusOK},
		{"disagree", false, nil, http.StatusConflict},
		{"unreadable", false, errors.New("redis: connection refused"), http.StatusServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mux := http.NewServeMux()
			New(Config{Token: testAdminToken, Check: func(context.Context) (map[string]any, bool, error) {
				if tc.err != nil {
					return nil, false, tc.err
				}
				return map[string]any{"pairingsActive": 2}, tc.ok, nil
			}}).Routes(mux)
			hs := httptest.NewServer(mux)
			defer hs.Close()
			resp, err := http.Get(hs.URL + "/debug/check")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != tc.status {
				t.Fatalf("%d %v (%v), want %d", resp.StatusCode, body, err, tc.status)
			}
			if tc.err == nil && (body["ok"] != tc.ok || body["pairingsActive"] != 2.0) {
				t.Fatalf("report %v", body)
			}
		})
	}
}

// TestProfiles: the admin listener serves Go's runtime profiles with no
// token, but never the command line, which may carry a secret flag.
func TestProfiles(t *testing.T) {
	mux := http.NewServeMux()
	New(Config{Token: testAdminToken}).Routes(mux)
	hs := httptest.NewServer(mux)
	defer hs.Close()
	for _, tc := range []struct {
		path   string
		status int
	}{
		{"/debug/pprof/", http.StatusOK},
		{"/debug/pprof/heap?debug=1", http.StatusOK},
		{"/debug/pprof/goroutine?debug=1", http.StatusOK},
		{"/debug/pprof/profile?seconds=1", http.StatusOK},
		{"/debug/pprof/cmdline", http.StatusNotFound},
	} {
		t.Run(tc.path, func(t *testing.T) {
			resp, err := http.Get(hs.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("%s: %d, want %d", tc.path, resp.StatusCode, tc.status)
			}
			if tc.status == http.StatusOK && len(body) == 0 {
				t.Fatalf("%s: empty profile", tc.path)
			}
		})
	}
}
