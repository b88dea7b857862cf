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

// restartCalls calls the page's echo steadily through a relay's restart,
// each call on a connection of its own (the process under it changes),
// and tallies how each was answered.
type restartCalls struct {
	relay, token string

	mu         sync.Mutex // guards the fields below
	kinds      map[string]int
	byPage     int       // calls the page answered
	restarted  time.Time // when the new process was healthy (zero: not yet)
	firstNoTab time.Time // the first and the last "no tab" answer
	lastNoTab  time.Time
	longest    time.Duration // the longest call the new process answered
	problems   errorList
}

// run calls until stop is closed.
func (r *restartCalls) run(stop <-chan struct{}) {
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		r.call(client, fmt.Sprintf("v%d", i))
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *restartCalls) call(client *http.Client, value string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	a, err := postMCP(ctx, client, r.relay, r.token, nextRPCID(), "tools/call",
		map[string]any{"name": "echo", "arguments": map[string]any{"value": value}})
	end := time.Now()
	text := fmt.Sprint(a.result["content"])
	r.mu.Lock()
	defer r.mu.Unlock()
	after := !r.restarted.IsZero() && start.After(r.restarted)
	kind := "other"
	switch {
	case err != nil:
		kind = "unreachable"
	case !a.isError() && strings.Contains(text, "the page") && strings.Contains(text, value):
		kind = "page"
		r.byPage++
	case a.text() == protocol.RestartingSentence(""):
		kind = "restarting"
	case a.text() == protocol.NoTabSentence(probeTitle):
		kind = "no_tab"
		if r.firstNoTab.IsZero() {
			r.firstNoTab = end
		}
		r.lastNoTab = end
	}
	r.kinds[kind]++
	if after {
		r.longest = max(r.longest, end.Sub(start))
		if kind != "page" {
			r.problems.add("call %s sent to the new process: %s (%v)", value, kind, a)
		}
	}
}

func (r *restartCalls) answeredByPage() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byPage
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
	t.Parallel() // a browser test: see browser_test.go
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
	approveInPage(t, cdpTab{ctx}, f.code)
	_, tokens := h.exchange(f, h.codeFrom(f, h.status(f)["redirect"]))

	calls := &restartCalls{relay: relayURL, token: tokens["access_token"].(string), kinds: map[string]int{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); calls.run(stop) }()
	eventually(t, func() bool { return calls.answeredByPage() >= 3 }, "the page answers calls")
	sigterm := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.exited
	exited := time.Now()
	startServe(t, listen, admin, data, env...)
	calls.mu.Lock()
	calls.restarted = time.Now()
	calls.mu.Unlock()
	waitState(t, ctx, "connected")
	back := time.Now()
	// The calls go on until the page has answered a few after it came back.
	answered := calls.answeredByPage()
	eventually(t, func() bool { return calls.answeredByPage() >= answered+5 }, "the page answers after the restart")
	close(stop)
	wg.Wait()

	calls.mu.Lock()
	defer calls.mu.Unlock()
	t.Logf("FIGURE SIGTERM to exit %v, exit to healthy %v, healthy to the page connected %v; the longest call at the new process %v; calls: %v",
		exited.Sub(sigterm).Round(time.Millisecond), calls.restarted.Sub(exited).Round(time.Millisecond),
		back.Sub(calls.restarted).Round(time.Millisecond), calls.longest.Round(time.Millisecond), calls.kinds)
	if n := calls.kinds["no_tab"]; n > 0 {
		t.Errorf("FIGURE %d calls heard that no tab is open while the page was reconnecting: from %v to %v after the new process was healthy",
			n, calls.firstNoTab.Sub(calls.restarted).Round(time.Millisecond), calls.lastNoTab.Sub(calls.restarted).Round(time.Millisecond))
	}
	if err := calls.problems.err(); err != nil {
		t.Error(err)
	}
	checkPageRuns(t, ctx, calls.byPage)
}

// checkPageRuns: the page ran each call once, and no more calls than it
// answered.
func checkPageRuns(t *testing.T, ctx context.Context, answered int) {
	t.Helper()
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
	if len(runs) != answered {
		t.Errorf("the page ran %d calls, %d were answered by it", len(runs), answered)
	}
}
