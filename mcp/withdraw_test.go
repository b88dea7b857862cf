package mcp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/internal/testwait"
	"github.com/tabrelay/tabrelay/protocol"
)

// forgettable verifies "c1" until forgotten is set, as a node that missed
// another node's event still would for a second.
type forgettable struct{ forgotten *atomic.Bool }

func (f forgettable) Verify(ctx context.Context, token string) (protocol.Grant, error) {
	if f.forgotten.Load() {
		return protocol.Grant{}, protocol.ErrInvalidToken
	}
	return tokenConnections{}.Verify(ctx, token)
}

// TestAKeepAliveChecksTheGrantAgain: the event of a Forget on another node
// may be lost on its way here (a hint over Redis pub/sub); a call in flight
// is still withdrawn, at its next keep-alive, whether the host reads an
// event stream or takes JSON only. Without the keep-alive's check the call
// runs on until it ends by itself.
func TestAKeepAliveChecksTheGrantAgain(t *testing.T) {
	for _, accept := range []string{"application/json, text/event-stream", "application/json"} {
		t.Run(accept, func(t *testing.T) {
			c := blockingCaller{ended: make(chan string, 1)}
			forgotten := &atomic.Bool{}
			ts := httptest.NewUnstartedServer(nil)
			srv, err := NewServer(Config{PublicURL: "http://" + ts.Listener.Addr().String(), Bundle: protocol.ProbeBundle(),
				Caller: c, Verifier: forgettable{forgotten}, KeepAlive: 20 * time.Millisecond, JSONWait: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			ts.Config.Handler = srv
			ts.Start()
			defer ts.Close()
			body := make(chan string, 1)
			go func() {
				req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(
					`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"counter","arguments":{"action":"get"}}}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", accept)
				req.Header.Set("Authorization", "Bearer c1")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					body <- err.Error()
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				body <- string(b)
			}()
			testwait.Eventually(t, func() bool { return srv.calls.count() > 0 }, "the call to reach the relay")
			forgotten.Store(true) // and no event says so
			select {
			case <-c.ended:
			case <-time.After(time.Minute):
				t.Fatal("the call went on after its grant ended")
			}
			if got := <-body; !strings.Contains(got, "ended this connection") {
				t.Fatalf("the host read %s, want the withdrawal", got)
			}
		})
	}
}
