package tests

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tabrelay/tabrelay/protocol"
)

// BenchmarkTokenExchangeFlood is issue 23 §2's attack on the token
// exchange, as a bounded run: one approved connection's host exchanges
// as fast as it can (EXCHANGE_FLOOD attempts, 2,000 by default), each
// live token until its parent is full, breadth first, while one tab of
// the browser reads every message the relay pushes. It reports the
// exchanges' latency (p50, p99, and the mean of the last 100), how many
// connections the flood minted, and how many pushes and bytes the tab
// was sent. It uses nothing of a build newer than the attack, so that an
// older commit runs it as is (docs/BENCHMARKS.md has both).
// EXCHANGE_PACE (a duration) moves the relay's clock that much before
// each attempt: a host that keeps within a rate limit.
func BenchmarkTokenExchangeFlood(b *testing.B) {
	attempts := 2000
	if n, err := strconv.Atoi(os.Getenv("EXCHANGE_FLOOD")); err == nil && n > 0 {
		attempts = n
	}
	pace, _ := time.ParseDuration(os.Getenv("EXCHANGE_PACE"))
	for range b.N {
		floodExchanges(b, attempts, pace)
	}
}

func floodExchanges(b *testing.B, attempts int, pace time.Duration) {
	r := startRelay(b, nil)
	br, _ := pairedBrowser(b, r)
	raw, err := os.ReadFile(br.secretFile)
	if err != nil {
		b.Fatal(err)
	}
	var pushes, pushBytes atomic.Int64
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	ws, _, err := rawTab(ctx, strings.TrimPrefix(r.url, "http://"), strings.TrimSpace(string(raw)))
	if err != nil {
		b.Fatal(err)
	}
	ws.SetReadLimit(protocol.MaxMessageBytes)
	defer ws.CloseNow()
	go func() {
		for {
			_, data, err := ws.Read(ctx)
			if err != nil {
				return
			}
			var m struct{ Type, Ref string }
			_ = json.Unmarshal(data, &m)
			switch {
			case m.Type == protocol.TypePing:
				_ = ws.Write(ctx, websocket.MessageText, []byte(`{"type":"pong"}`))
			case m.Type == protocol.TypeConnections && m.Ref == "":
				pushes.Add(1)
				pushBytes.Add(int64(len(data)))
			}
		}
	}()

	h := newHost(b, r.url)
	_, tokens := connect(b, r, br, h, "whoami")
	queue := []string{tokens["access_token"].(string)}
	uses := map[string]int{}
	minted := 0
	lat := make([]time.Duration, 0, attempts)
	for range attempts {
		subject := queue[0]
		r.clock.Advance(pace)
		start := time.Now()
		status, out := h.tokenExchange(subject, "")
		lat = append(lat, time.Since(start))
		if status == http.StatusOK {
			minted++
			queue = append(queue, out["access_token"].(string))
			uses[subject]++
		}
		if (status != http.StatusOK || uses[subject] == 16) && len(queue) > 1 {
			queue = queue[1:]
		}
	}
	time.Sleep(2 * time.Second) // the last pushes reach the tab
	last := lat[max(0, len(lat)-100):]
	var sum time.Duration
	for _, d := range last {
		sum += d
	}
	sorted := slices.Clone(lat)
	slices.Sort(sorted)
	b.ReportMetric(float64(sorted[len(sorted)/2].Microseconds()), "p50-exchange-us")
	b.ReportMetric(float64(sorted[len(sorted)*99/100].Microseconds()), "p99-exchange-us")
	b.ReportMetric(float64(sum.Microseconds())/float64(len(last)), "last100-exchange-us")
	b.ReportMetric(float64(minted), "minted")
	b.ReportMetric(float64(pushes.Load()), "pushes")
	b.ReportMetric(float64(pushBytes.Load())/1e6, "push-MB")
}
