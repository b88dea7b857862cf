package tests

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tabrelay/tabrelay/protocol"
)

// restartTally is what the calls of a restart got, by kind, with the
// first and last "no tab" answer.
type restartTally struct {
	mu                sync.Mutex // guards the fields below
	kinds             map[string]int
	byPage            []string  // the values the page echoed
	firstNoTab, lastN time.Time // the first and the last "no tab" answer
	other             errorList
}

func (r *restartTally) add(kind, value string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kinds[kind]++
	switch kind {
	case "page":
		r.byPage = append(r.byPage, value)
	case "no_tab":
		if r.firstNoTab.IsZero() {
			r.firstNoTab = at
		}
		r.lastN = at
	}
}

// TestChromiumPageOutlivesItsRelaysRestart is issue 25 item 2: a single
// node on its embedded store, a real `tabrelay serve` process as `make run`
// starts it (the product's drain window, grace and shutdown delay), the
// page open in Chromium, and a host calling its tool steadily; the relay
// gets SIGTERM and is started again at once on the same ports and data.
// Every call the new process answers is answered by the page: none hears
// that no tab is open while the page reconnects (before the fix, calls
// heard so for seconds: the new process knew nothing of the tabs the old
// one drained). Calls at the old process while it drains hear the
// restarting sentence; calls while nothing listens are refused a
// connection. The page runs each call once.
func TestChromiumPageOutlivesItsRelaysRestart(t *testing.T) {
	ctx := chromium(t)
	listen, admin, data := freePort(t), freePort(t), t.TempDir()
	relayURL := "http://" + listen
	pageOrigin, pageURL := appPage(t, echoPage(relayURL))
	// make run's settings (the harness's are shorter).
	env := []string{"ALLOWED_ORIGINS=" + pageOrigin + "," + origin, "RELAY_DRAIN_WINDOW=10s", "RELAY_GRACE=30s", "RELAY_SHUTDOWN_DELAY=2s"}
	p := startServe(t, listen, admin, data, env...)
	if err := chromedp.Do(ctx, chromedp.Navigate(pageURL)); err != nil {
		t.Fatal(err)
	}
	waitState(t, ctx, "connected")
	h := newHost(t, relayURL)
	h.register()
	f := h.authorize()
	approveInPage(t, ctx, f.code)
	_, tokens := h.exchange(f, h.codeFrom(f, h.status(f)["redirect"]))
	token := tokens["access_token"].(string)

	tally := &restartTally{kinds: map[string]int{}}
	var restarted time.Time // when the new process was healthy (set before stop)
	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// A new connection per call: the process under it changes.
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			value := fmt.Sprintf("v%d", i)
			cctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			a, err := postMCP(cctx, client, relayURL, token, nextRPCID(), "tools/call",
				map[string]any{"name": "echo", "arguments": map[string]any{"value": value}})
			cancel()
			now := time.Now()
			text := fmt.Sprint(a.result["content"])
			mu.Lock()
			after := !restarted.IsZero()
			mu.Unlock()
			switch {
			case err != nil:
				tally.add("unreachable", "", now)
			case !a.isError() && strings.Contains(text, "chromium") && strings.Contains(text, value):
				tally.add("page", value, now)
			case a.text() == protocol.RestartingSentence(""):
				tally.add("restarting", "", now)
				if after {
					tally.other.add("call %s after the restart: the restarting sentence", value)
				}
			case a.text() == protocol.NoTabSentence(probeTitle):
				tally.add("no_tab", "", now)
			default:
				tally.add("other", "", now)
				tally.other.add("call %s: %v", value, a)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()

	eventually(t, func() bool { tally.mu.Lock(); defer tally.mu.Unlock(); return len(tally.byPage) >= 3 }, "the page answers calls")
	sigterm := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.exited
	exited := time.Now()
	startServe(t, listen, admin, data, env...)
	mu.Lock()
	restarted = time.Now()
	mu.Unlock()
	waitState(t, ctx, "connected")
	back := time.Now()
	// Calls go on until the page has answered a few after it came back.
	pageAnswers := func() int { tally.mu.Lock(); defer tally.mu.Unlock(); return len(tally.byPage) }
	answered := pageAnswers()
	eventually(t, func() bool { return pageAnswers() >= answered+5 }, "the page answers after the restart")
	close(stop)
	wg.Wait()

	tally.mu.Lock()
	defer tally.mu.Unlock()
	t.Logf("FIGURE SIGTERM to exit %v, exit to healthy %v, healthy to the page connected %v; calls: %v",
		exited.Sub(sigterm).Round(time.Millisecond), restarted.Sub(exited).Round(time.Millisecond),
		back.Sub(restarted).Round(time.Millisecond), tally.kinds)
	if n := tally.kinds["no_tab"]; n > 0 {
		t.Errorf("FIGURE %d calls heard that no tab is open while the page was reconnecting: from %v to %v after the new process was healthy (a window of %v)",
			n, tally.firstNoTab.Sub(restarted).Round(time.Millisecond), tally.lastN.Sub(restarted).Round(time.Millisecond),
			tally.lastN.Sub(tally.firstNoTab).Round(time.Millisecond))
	}
	if err := tally.other.err(); err != nil {
		t.Error(err)
	}
	// The page ran each call once, and only the calls answered by it.
	runs, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.runs`))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, id := range runs {
		if seen[id] {
			t.Errorf("the page ran call %s twice", id)
		}
		seen[id] = true
	}
	if len(runs) != len(tally.byPage) {
		t.Errorf("the page ran %d calls, %d were answered by it", len(runs), len(tally.byPage))
	}
}
