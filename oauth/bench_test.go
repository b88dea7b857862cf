package oauth_test

import (
	"context"
	"encoding/json"
	"github.com/tabrelay/tabrelay/protocol"
	"net/http"
	"runtime"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/tabrelay/tabrelay/oauth"
)

// The token benchmarks go over real HTTP to a real bolt store, which
// syncs every write to disk: they measure what a host waits for.

// BenchmarkTokenAuthorizationCode times the code exchange alone (POST
// /token, grant authorization_code); the authorization request, the
// approval and the status poll that mint each code run with the timer
// stopped.
func BenchmarkTokenAuthorizationCode(b *testing.B) {
	h := newHarness(b)
	client := h.register("Bench Client", testCB)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		w := h.startConnect(client, testCB)
		form := w.exchangeForm(h.authCode(w), h.srv.URL)
		b.StartTimer()
		h.tokenOK(form)
	}
}

// BenchmarkTokenRefresh rotates one family's refresh token, one request
// after the other.
func BenchmarkTokenRefresh(b *testing.B) {
	h := newHarness(b)
	client := h.register("Bench Client", testCB)
	tok := h.connect(client)
	for b.Loop() {
		tok = h.tokenOK(refreshForm(client, tok.RefreshToken, h.srv.URL))
	}
}

// BenchmarkTokenRefreshContended rotates refresh tokens from many
// goroutines at once.
func BenchmarkTokenRefreshContended(b *testing.B) {
	// OwnFamily: each goroutine rotates its own family; the families
	// contend only for the store.
	b.Run("OwnFamily", func(b *testing.B) {
		h := newHarness(b)
		client := h.register("Bench Client", testCB)
		own := make(chan tokens, runtime.GOMAXPROCS(0))
		for range cap(own) {
			own <- h.connect(client)
		}
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			tok := <-own
			for pb.Next() {
				st, body, err := h.refresh(client, tok.RefreshToken)
				if err != nil || st != http.StatusOK {
					b.Errorf("refresh of an own family: %d %s %v", st, body, err)
					return
				}
				tok = tokens{}
				json.Unmarshal(body, &tok)
			}
		})
	})

	// OneToken4: per op, 1+RefreshRetries goroutines present the same
	// refresh token at once, as a client racing itself would: the
	// rotation and its grace retries. The family must survive (no reuse
	// detected; one more would be reuse, TestRefreshGrace), each of them
	// gets tokens, and exactly one of those refresh tokens must be the
	// family's current one.
	b.Run("OneToken4", func(b *testing.B) {
		const racers = 1 + oauth.RefreshRetries
		h := newHarness(b)
		client := h.register("Bench Client", testCB)
		tok := h.connect(client)
		ctx := context.Background()
		var ok, refused int
		b.ResetTimer()
		for range b.N {
			results := make([]tokens, racers)
			statuses := make([]int, racers)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range racers {
				wg.Go(func() {
					<-start
					st, body, err := h.refresh(client, tok.RefreshToken)
					statuses[i] = st
					var e struct {
						Error string `json:"error"`
					}
					switch {
					case err != nil:
						b.Error(err)
					case st == http.StatusOK:
						json.Unmarshal(body, &results[i])
					case st != http.StatusBadRequest || json.Unmarshal(body, &e) != nil || e.Error != "invalid_grant":
						b.Errorf("a racing refresh: %d %s", st, body)
					}
				})
			}
			close(start)
			wg.Wait()

			b.StopTimer()
			current, won := 0, 0
			for i, st := range statuses {
				if st != http.StatusOK {
					refused++
					continue
				}
				ok++
				won++
				if h.as.RefreshIsCurrent(ctx, results[i].RefreshToken) {
					current++
					tok = results[i]
				}
			}
			if won != racers || current != 1 {
				b.Fatalf("a round of %d: %d got tokens, %d of them current; want all and exactly 1",
					racers, won, current)
			}
			b.StartTimer()
		}
		b.StopTimer()
		if n := testutil.ToFloat64(h.metrics.RefreshReuse); n != 0 {
			b.Errorf("racing presentations of one token were taken for reuse %v times", n)
		}
		if _, err := h.as.Verify(ctx, tok.AccessToken); err != nil {
			b.Errorf("the family did not survive the races: %v", err)
		}
		b.ReportMetric(float64(ok)/float64(b.N), "ok/op")
		b.ReportMetric(float64(refused)/float64(b.N), "refused/op")
	})
}

// BenchmarkVerify checks one access token, calling the server directly.
func BenchmarkVerify(b *testing.B) {
	h := newHarness(b)
	tok := h.connect(h.register("Bench Client", testCB))
	ctx := context.Background()
	b.Run("Serial", func(b *testing.B) {
		for b.Loop() {
			if _, err := h.as.Verify(ctx, tok.AccessToken); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := h.as.Verify(ctx, tok.AccessToken); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkScopeGuard is the guard's cost per tool call: the connection's
// resolved scope read from the embedded store, and the check of one tool
// and action against it.
func BenchmarkScopeGuard(b *testing.B) {
	h := newHarness(b)
	tok := h.connect(h.register("Bench Client", testCB))
	ctx := context.Background()
	g, err := h.as.Verify(ctx, tok.AccessToken)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		entries, err := h.as.ResolvedScope(ctx, g.ConnectionID)
		if err != nil || !protocol.Allows(entries, "whoami", "") {
			b.Fatalf("%v %v", entries, err)
		}
	}
}
