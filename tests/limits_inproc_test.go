//go:build !race

// In-process members: see cluster_inproc_test.go for why without the race
// detector.

package tests

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tabrelay/tabrelay/internal/redistest"
	"github.com/tabrelay/tabrelay/node"
	"github.com/tabrelay/tabrelay/pairing"
	"github.com/tabrelay/tabrelay/protocol"
)

// TestInProcessLimitsCountOnEveryNode (issue 23): registrations,
// authorization requests and the hellos of new browsers are counted per
// address in Redis, not in each node's memory. What one address spends
// through node a is spent on node b too: two nodes do not let twice as
// much through. The refusals say when to come back.
func TestInProcessLimitsCountOnEveryNode(t *testing.T) {
	nodes := startMembers(t, redistest.Start(t), 2, func(c *node.Config) { c.NewPairingsBurst, c.NewPairingsPerHour = 2, 1 })
	a, b := nodes[0], nodes[1]

	post := func(r *relay) (int, http.Header) {
		resp, err := http.Post(r.url+"/register", "application/json",
			strings.NewReader(`{"client_name":"Limits","redirect_uris":["https://host.example/cb"]}`))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	for i := range 20 {
		if st, _ := post(a); st != http.StatusCreated {
			t.Fatalf("registration %d through node a: %d", i+1, st)
		}
	}
	if st, h := post(b); st != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
		t.Fatalf("the 21st registration of the address, through node b: %d (Retry-After %q), want 429 with a wait", st, h.Get("Retry-After"))
	}

	get := func(r *relay) int {
		resp, err := http.Get(r.url + "/authorize") // counted before it is read: an incomplete one will do
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for i := range 30 {
		if st := get(a); st == http.StatusTooManyRequests {
			t.Fatalf("authorization request %d through node a: %d", i+1, st)
		}
	}
	if st := get(b); st != http.StatusTooManyRequests {
		t.Fatalf("the 31st authorization request of the address, through node b: %d, want 429", st)
	}

	for i := range 2 {
		if code, reason := helloOfNewBrowser(t, a); code != 0 {
			t.Fatalf("new browser %d through node a: closed %d %q", i+1, code, reason)
		}
	}
	code, reason := helloOfNewBrowser(t, b)
	if code != protocol.CloseUnavailable || protocol.RetryIn(reason) <= 0 {
		t.Fatalf("the third new browser of the address, through node b: closed %d %q, want 4007 with a wait", code, reason)
	}
}

// helloOfNewBrowser says hello through r with a secret the relay never
// saw, and returns how the socket ended: 0 after a welcome, else the
// close code and reason.
func helloOfNewBrowser(t *testing.T, r *relay) (protocol.CloseCode, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(r.url, "http")+"/tab",
		&websocket.DialOptions{HTTPHeader: http.Header{"Origin": {origin}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	secret := make([]byte, pairing.SecretBytes)
	rand.Read(secret)
	hello, _ := json.Marshal(protocol.Hello{Envelope: protocol.Typed(protocol.TypeHello), Protocol: protocol.Version,
		Secret: base64.RawURLEncoding.EncodeToString(secret), TabID: "limits"})
	if err := ws.Write(ctx, websocket.MessageText, hello); err != nil {
		t.Fatal(err)
	}
	_, data, err := ws.Read(ctx)
	var ce websocket.CloseError
	switch {
	case err == nil && strings.Contains(string(data), `"welcome"`):
		return 0, ""
	case errors.As(err, &ce):
		return protocol.CloseCode(ce.Code), ce.Reason
	}
	t.Fatalf("after the hello: %s %v", data, err)
	return 0, ""
}
