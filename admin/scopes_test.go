package admin

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/internal/syncbuf"
	"github.com/tabrelay/tabrelay/oauth"
	"github.com/tabrelay/tabrelay/protocol"
	"github.com/tabrelay/tabrelay/store/bolt"
)

const testAdminToken = "0123456789abcdef-admin"

// testAPI is the admin API over a real authorization server and embedded
// store, served by a real HTTP server.
type testAPI struct {
	url   string
	store *bolt.Store
	oauth *oauth.Server
}

func startAPI(t *testing.T, token string) (*testAPI, *syncbuf.Buffer) {
	t.Helper()
	logs := &syncbuf.Buffer{}
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	store, err := bolt.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	bundle := protocol.ProbeBundle()
	srv, err := oauth.NewServer(oauth.Config{Issuer: "http://127.0.0.1:1", Bundle: bundle, Store: store,
		Hasher: oauth.NewHasher([]byte(strings.Repeat("k", 32))), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	New(Config{Token: token, Bundle: bundle, Scopes: srv, Connections: store, Logger: logger}).Routes(mux)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return &testAPI{url: hs.URL, store: store, oauth: srv}, logs
}

func adminDo(t *testing.T, n *testAPI, method, path, auth, body string) (int, map[string]any, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(method, n.url+path, strings.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out, resp.Header
}

func TestAdminAuth(t *testing.T) {
	n, logs := startAPI(t, testAdminToken)
	for _, auth := range []string{"", "Bearer", "Bearer wrong-token-of-some-length", "Bearer " + testAdminToken + "x",
		"Bearer " + testAdminToken[:len(testAdminToken)-1], "Basic " + testAdminToken, testAdminToken} {
		for _, path := range []string{"/admin/scopes/conn_x", "/admin/scopes?tool=whoami", "/admin/nothing"} {
			status, body, hdr := adminDo(t, n, http.MethodGet, path, auth, "")
			if status != http.StatusUnauthorized || body["error"] != protocol.ErrUnauthorized.Code || !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s with %q: %d %v, want 401", path, auth, status, body)
			}
		}
	}
	if strings.Contains(logs.String(), testAdminToken) {
		t.Fatal("the admin token reached the log")
	}
	// The right token passes (an unknown connection is then a 404), in
	// either case of the scheme.
	for _, scheme := range []string{"Bearer ", "bearer "} {
		if status, body, _ := adminDo(t, n, http.MethodGet, "/admin/scopes/conn_x", scheme+testAdminToken, ""); status != http.StatusNotFound || body["error"] != protocol.ErrNotFound.Code {
			t.Errorf("%q right token, unknown connection: %d %v", scheme, status, body)
		}
	}
}

func TestAdminDisabledWithoutToken(t *testing.T) {
	n, _ := startAPI(t, "")
	for _, auth := range []string{"", "Bearer ", "Bearer anything-at-all-here"} {
		status, body, _ := adminDo(t, n, http.MethodGet, "/admin/scopes/conn_x", auth, "")
		if status != http.StatusNotFound || body["error"] != protocol.ErrAdminDisabled.Code || !strings.Contains(body["message"].(string), "RELAY_ADMIN_TOKEN") {
			t.Errorf("auth %q: %d %v, want 404 admin-disabled", auth, status, body)
		}
	}
}

func TestAdminRequestChecks(t *testing.T) {
	n, _ := startAPI(t, testAdminToken)
	auth := "Bearer " + testAdminToken
	cases := []struct {
		method, path, body string
		status             int
		want               string
	}{
		{http.MethodGet, "/admin/scopes", "", http.StatusBadRequest, "Name the tool"},
		{http.MethodGet, "/admin/scopes?tool=nope", "", http.StatusBadRequest, `no tool "nope"`},
		{http.MethodGet, "/admin/scopes?tool=counter&action=nope", "", http.StatusBadRequest, `no action "nope"`},
		{http.MethodPut, "/admin/scopes/conn_x", "{", http.StatusBadRequest, "not the JSON"},
		{http.MethodPut, "/admin/scopes/conn_x", `{"entries":[],"extra":1}`, http.StatusBadRequest, "extra"},
		{http.MethodPut, "/admin/scopes/conn_x", `{}`, http.StatusBadRequest, `needs "entries"`},
		{http.MethodPost, "/admin/scopes/conn_x", `{"entries":[]}`, http.StatusBadRequest, "at least one"},
		{http.MethodPut, "/admin/scopes/conn_x", `{"entries":[` + strings.Repeat(`{"tool":"whoami","actions":["*"]},`, 3000) + `]}`, http.StatusRequestEntityTooLarge, "64 KiB"},
		{http.MethodPut, "/admin/scopes/conn_x", `{"entries":[]}`, http.StatusNotFound, `no connection "conn_x"`},
		{http.MethodDelete, "/admin/scopes/conn_x", "", http.StatusNotFound, `no connection "conn_x"`},
		{http.MethodPatch, "/admin/scopes/conn_x", "", http.StatusMethodNotAllowed, "Use GET"},
	}
	for _, tc := range cases {
		status, body, _ := adminDo(t, n, tc.method, tc.path, auth, tc.body)
		msg, _ := body["message"].(string)
		if status != tc.status || !strings.Contains(msg, tc.want) {
			t.Errorf("%s %s %.40s: %d %q, want %d %q", tc.method, tc.path, tc.body, status, msg, tc.status, tc.want)
		}
	}
	if status, body, _ := adminDo(t, n, http.MethodGet, "/admin/scopes?tool=counter&action=get", auth, ""); status != http.StatusOK || body["tool"] != "counter" || body["action"] != "get" {
		t.Errorf("holders: %d %v", status, body)
	} else if conns, ok := body["connections"].([]any); !ok || len(conns) != 0 {
		t.Errorf("holders of a new relay: %v", body["connections"])
	}
}

// TestAdminUnreadableAndForgotten: a record that does not parse shows as
// no access with "unreadable", and writing it anew repairs it; a
// forgotten connection cannot be granted anything.
func TestAdminUnreadableAndForgotten(t *testing.T) {
	n, _ := startAPI(t, testAdminToken)
	auth := "Bearer " + testAdminToken
	ctx := context.Background()
	for _, id := range []string{"conn_odd", "conn_gone"} {
		if err := n.store.PutConnection(ctx, oauth.Connection{ID: id, Kind: "connector", CreatedAt: time.Now(), PairingID: "p", ClientName: "Test", Host: "h.test", Revoked: id == "conn_gone"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.store.PutScope(ctx, "conn_odd", oauth.Scope{Version: 99, Entries: []protocol.ScopeEntry{{Tool: "whoami", Actions: []string{"*"}}}}); err != nil {
		t.Fatal(err)
	}
	status, body, _ := adminDo(t, n, http.MethodGet, "/admin/scopes/conn_odd", auth, "")
	if entries, _ := body["entries"].([]any); status != http.StatusOK || body["unreadable"] != true || entries == nil || len(entries) != 0 || body["version"] != 0.0 {
		t.Fatalf("unreadable record: %d %v", status, body)
	}
	status, body, _ = adminDo(t, n, http.MethodPut, "/admin/scopes/conn_odd", auth, `{"entries":[{"tool":"counter","actions":["get"]}]}`)
	if entries, _ := body["entries"].([]any); status != http.StatusOK || body["unreadable"] != nil || len(entries) != 1 || body["updatedBy"] != "admin:cli" {
		t.Fatalf("rewritten: %d %v", status, body)
	}
	req, _ := http.NewRequest(http.MethodPost, n.url+"/admin/scopes/conn_odd", strings.NewReader(`{"entries":[{"tool":"whoami"}]}`))
	req.Header.Set("Authorization", auth)
	req.Header.Set("X-Admin-Who", "bob \"forged\"")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a bad X-Admin-Who: %v %v", err, resp)
	} else {
		resp.Body.Close()
	}
	status, body, _ = adminDo(t, n, http.MethodPost, "/admin/scopes/conn_gone", auth, `{"entries":[{"tool":"counter"}]}`)
	if status != http.StatusNotFound || !strings.Contains(body["message"].(string), "forgotten") {
		t.Fatalf("grant to a forgotten connection: %d %v", status, body)
	}
	if status, body, _ = adminDo(t, n, http.MethodGet, "/admin/scopes/conn_gone", auth, ""); status != http.StatusOK || body["revoked"] != true {
		t.Fatalf("forgotten connection: %d %v", status, body)
	}
}

// TestAdminConcurrentAddsAllLand (issue 15 item 5): adds to one
// connection's scope at once are each kept: the read of the record an add
// widens and its write are one transaction.
func TestAdminConcurrentAddsAllLand(t *testing.T) {
	n, _ := startAPI(t, testAdminToken)
	auth := "Bearer " + testAdminToken
	if err := n.store.PutConnection(context.Background(), oauth.Connection{ID: "conn_a", Kind: "connector", CreatedAt: time.Now(), PairingID: "p", ClientName: "Test", Host: "h.test"}); err != nil {
		t.Fatal(err)
	}
	var tools []string
	for _, tool := range protocol.ProbeBundle().Tools {
		tools = append(tools, tool.Name)
	}
	for round := range 5 {
		if status, body, _ := adminDo(t, n, http.MethodPut, "/admin/scopes/conn_a", auth, `{"entries":[]}`); status != http.StatusOK {
			t.Fatalf("clear: %d %v", status, body)
		}
		var wg sync.WaitGroup
		for _, tool := range tools {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body := `{"entries":[{"tool":"` + tool + `","actions":["*"]}]}`
				if status, out, _ := adminDo(t, n, http.MethodPost, "/admin/scopes/conn_a", auth, body); status != http.StatusOK {
					t.Errorf("add %s: %d %v", tool, status, out)
				}
			}()
		}
		wg.Wait()
		sc, err := n.oauth.Scope(context.Background(), "conn_a")
		if err != nil {
			t.Fatal(err)
		}
		if len(sc.Entries) != len(tools) {
			t.Fatalf("round %d: %d concurrent adds left %d entries: adds were lost", round, len(tools), len(sc.Entries))
		}
	}
}

// TestAdminWhoNamesDerivedConnections (issue 15 item 5): "who may call X"
// names a derived connection that inherits its parent's scope, and one
// whose own entries, intersected with its parent's, grant X; not one
// whose own entries leave X out.
func TestAdminWhoNamesDerivedConnections(t *testing.T) {
	n, _ := startAPI(t, testAdminToken)
	auth := "Bearer " + testAdminToken
	ctx := context.Background()
	later := time.Now().Add(time.Hour)
	for _, c := range []oauth.Connection{
		{ID: "conn_parent", Kind: "connector", CreatedAt: time.Now(), PairingID: "p", ClientName: "Test", Host: "h.test"},
		{ID: "conn_heir", Kind: "connector", CreatedAt: time.Now(), PairingID: "p", ClientName: "Test", Host: "h.test", ParentID: "conn_parent", ExpiresAt: later},
		{ID: "conn_grandheir", Kind: "connector", CreatedAt: time.Now(), PairingID: "p", ClientName: "Test", Host: "h.test", ParentID: "conn_heir", ExpiresAt: later},
		{ID: "conn_narrow", Kind: "connector", CreatedAt: time.Now(), PairingID: "p", ClientName: "Test", Host: "h.test", ParentID: "conn_parent", ExpiresAt: later},
		{ID: "conn_other", Kind: "connector", CreatedAt: time.Now(), PairingID: "q", ClientName: "Test", Host: "h.test"},
	} {
		if err := n.store.PutConnection(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	put := func(conn, body string) {
		t.Helper()
		if status, out, _ := adminDo(t, n, http.MethodPut, "/admin/scopes/"+conn, auth, body); status != http.StatusOK {
			t.Fatalf("set %s: %d %v", conn, status, out)
		}
	}
	put("conn_parent", `{"entries":[{"tool":"counter","actions":["get","reset"]},{"tool":"whoami","actions":["*"]}]}`)
	put("conn_narrow", `{"entries":[{"tool":"whoami","actions":["*"]}]}`)
	put("conn_other", `{"entries":[{"tool":"whoami","actions":["*"]}]}`)
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"tool=counter&action=get", []string{"conn_grandheir", "conn_heir", "conn_parent"}},
		{"tool=counter", []string{"conn_grandheir", "conn_heir", "conn_parent"}},
		{"tool=counter&action=increment", nil},
		{"tool=whoami", []string{"conn_grandheir", "conn_heir", "conn_narrow", "conn_other", "conn_parent"}},
	} {
		status, body, _ := adminDo(t, n, http.MethodGet, "/admin/scopes?"+tc.query, auth, "")
		if status != http.StatusOK {
			t.Fatalf("%s: %d %v", tc.query, status, body)
		}
		var got []string
		for _, c := range body["connections"].([]any) {
			got = append(got, c.(string))
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("who %s = %v, want %v", tc.query, got, tc.want)
		}
	}
}
