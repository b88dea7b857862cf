package headless

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/tabrelay/tabrelay/protocol"
)

// A try is what the scripted relay does with one dial of the tab.
type try struct {
	status     int                // refuse the handshake with this status (0: upgrade)
	retryAfter string             // the refusal's Retry-After
	close      protocol.CloseCode // after the welcome, close at once with this code
	drainMs    int64              // after the welcome, drain with this delay (-1: none)
	stable     bool               // after the welcome, let the socket age past stableAfter, then drop it
	reason     string             // close after the hello, before a welcome, with close and this reason
}

func refuse(retryAfter string) try {
	return try{status: http.StatusServiceUnavailable, retryAfter: retryAfter, drainMs: -1}
}

// closeAfterWelcome is a relay that welcomes the tab, then closes at once
// (4007 after a failed registration, 4005 too many tabs).
func closeAfterWelcome() try { return try{close: protocol.CloseUnavailable, drainMs: -1} }

// newBrowserRefused is a relay that refuses the tab's hello: a browser it
// does not know, from an address that made its new pairings for now.
func newBrowserRefused(wait time.Duration) try {
	return try{close: protocol.CloseUnavailable, reason: protocol.NewBrowserWaitReason(wait), drainMs: -1}
}

func drainAfterWelcome(ms int64) try { return try{drainMs: ms} }

// stableThenKilled is a socket that lived past stableAfter, then its node
// died (no close frame: kill -9).
func stableThenKilled() try { return try{stable: true, drainMs: -1} }

// scriptedRelay answers the tab's dials in turn as its script says (a
// refusal once the script is done), on a listener that numbers its TCP
// connections, and records which connection each dial came on.
type scriptedRelay struct {
	srv   *httptest.Server
	clock *fakeClock

	mu     sync.Mutex // guards the fields below
	script []try
	conns  []int // the connection of each dial, in order
}

type connKey struct{}

func newScriptedRelay(t *testing.T, clock *fakeClock, script ...try) *scriptedRelay {
	r := &scriptedRelay{clock: clock, script: script}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	r.srv.Listener = &numberingListener{Listener: r.srv.Listener}
	r.srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, c.(*numberedConn).n)
	}
	r.srv.Start()
	t.Cleanup(r.srv.Close)
	return r
}

func (r *scriptedRelay) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.conns = append(r.conns, req.Context().Value(connKey{}).(int))
	step := refuse("")
	if len(r.script) > 0 {
		step, r.script = r.script[0], r.script[1:]
	}
	r.mu.Unlock()
	if step.status != 0 {
		if step.retryAfter != "" {
			w.Header().Set("Retry-After", step.retryAfter)
		}
		// No Connection: close, as the relay answered before issue 17:
		// the server keeps the connection for another request.
		http.Error(w, "draining", step.status)
		return
	}
	ws, err := websocket.Accept(w, req, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return
	}
	defer ws.CloseNow()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if _, _, err := ws.Read(ctx); err != nil { // the hello
		return
	}
	if step.reason != "" {
		_ = ws.Close(websocket.StatusCode(step.close), step.reason)
		return
	}
	write(ctx, ws, protocol.Welcome{Envelope: protocol.Typed(protocol.TypeWelcome), Protocol: protocol.Version,
		Pairing: "ptest", PingIntervalMs: 60_000, MaxMessage: protocol.MaxMessageBytes})
	switch {
	case step.drainMs >= 0:
		write(ctx, ws, protocol.Drain{Envelope: protocol.Typed(protocol.TypeDrain), ReconnectAfterMs: step.drainMs})
		_, _, _ = ws.Read(ctx) // until the tab leaves
	case step.stable:
		// The tab answers in order: once its pong is here, it has taken
		// the welcome, and the socket's age runs from then.
		write(ctx, ws, protocol.Ping{Envelope: protocol.Typed(protocol.TypePing)})
		if _, _, err := ws.Read(ctx); err != nil {
			return
		}
		r.clock.advance(stableAfter)
	default:
		_ = ws.Close(websocket.StatusCode(step.close), step.close.Reason())
	}
}

func write(ctx context.Context, ws *websocket.Conn, msg any) {
	data, _ := json.Marshal(msg)
	_ = ws.Write(ctx, websocket.MessageText, data) // a failure shows in the tab's waits
}

// dials returns the connection number of each dial so far.
func (r *scriptedRelay) dials() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.conns...)
}

// numberingListener numbers the connections it accepts, from 1.
type numberingListener struct {
	net.Listener
	mu sync.Mutex
	n  int
}

type numberedConn struct {
	net.Conn
	n int
}

func (l *numberingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	return &numberedConn{Conn: c, n: l.n}, nil
}

// fakeClock is the real clock moved on by advance.
type fakeClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off += d
}

// waitsOf runs a tab with the default backoff bounds against relay and
// returns the first n waits it chose between tries, without waiting them.
// jitter replaces the random draw.
func waitsOf(t *testing.T, relay *scriptedRelay, n int, jitter func(time.Duration) time.Duration) []time.Duration {
	t.Helper()
	waits := make(chan time.Duration)
	tab := start(t, Options{Relay: relay.srv.URL, Origin: testOrigin, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		func(tab *Tab) {
			tab.jitter, tab.now = jitter, relay.clock.now
			tab.sleep = func(ctx context.Context, d time.Duration) error {
				select {
				case waits <- d:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		})
	var got []time.Duration
	for len(got) < n {
		select {
		case d := <-waits:
			got = append(got, d)
		case <-tab.done:
			t.Fatalf("Run returned %v after the waits %v", tab.err, got)
		case <-time.After(waitLong):
			t.Fatalf("no wait after %v", got)
		}
	}
	return got
}

func ceiling(d time.Duration) time.Duration { return d }

func TestBackoffFollowsHowTriesEnd(t *testing.T) {
	const s = time.Second
	tests := []struct {
		name   string
		script []try
		want   []time.Duration
		jitter func(time.Duration) time.Duration
	}{{
		name:   "grows while dials fail, up to the cap",
		script: []try{refuse(""), refuse(""), refuse(""), refuse(""), refuse(""), refuse(""), refuse("")},
		want:   []time.Duration{1 * s, 2 * s, 4 * s, 8 * s, 16 * s, 20 * s, 20 * s},
	}, {
		name: "starts again from the bottom after a welcomed socket that lived",
		// A tab refused while a node drained, then welcomed elsewhere,
		// whose node is killed (issue 17: it waited 19.5 s).
		script: []try{refuse(""), refuse(""), refuse(""), refuse(""), stableThenKilled(), refuse(""), refuse("")},
		want:   []time.Duration{1 * s, 2 * s, 4 * s, 8 * s, s / 2, 1 * s, 2 * s},
	}, {
		name:   "a drain's delay, and the bottom after it",
		script: []try{refuse(""), refuse(""), refuse(""), drainAfterWelcome(4210), refuse(""), drainAfterWelcome(0)},
		want:   []time.Duration{1 * s, 2 * s, 4 * s, 4210 * time.Millisecond, 1 * s, 0},
	}, {
		name:   "grows against a relay that closes right after the welcome",
		script: []try{closeAfterWelcome(), closeAfterWelcome(), closeAfterWelcome(), closeAfterWelcome(), closeAfterWelcome(), closeAfterWelcome(), closeAfterWelcome()},
		want:   []time.Duration{1 * s, 2 * s, 4 * s, 8 * s, 16 * s, 20 * s, 20 * s},
	}, {
		name:   "grows against refusals between early closes",
		script: []try{closeAfterWelcome(), refuse(""), closeAfterWelcome(), refuse(""), closeAfterWelcome(), refuse("")},
		want:   []time.Duration{1 * s, 2 * s, 2 * s, 4 * s, 4 * s, 8 * s},
	}, {
		name: "a welcome forgets the refusals before it, not the early closes",
		script: []try{refuse(""), refuse(""), refuse(""), refuse(""), closeAfterWelcome(),
			refuse(""), closeAfterWelcome(), stableThenKilled()},
		want: []time.Duration{1 * s, 2 * s, 4 * s, 8 * s, 1 * s, 2 * s, 2 * s, s / 2},
	}, {
		name:   "Retry-After is a lower bound, capped at the longest wait",
		script: []try{refuse("3"), refuse("3"), refuse("3"), refuse("120"), refuse("soon"), refuse("0")},
		want:   []time.Duration{3 * s, 3 * s, 4 * s, 20 * s, 16 * s, 20 * s},
	}, {
		// Issue 23: a new browser over its address's limit is told when to
		// come back, and waits that plus the backoff (the tabs refused
		// together spread out), not capped at the longest backoff.
		name:   "a close's retry in N s is waited out, plus the backoff",
		script: []try{newBrowserRefused(90 * s), newBrowserRefused(3599500 * time.Millisecond), newBrowserRefused(5 * time.Hour), refuse("")},
		want:   []time.Duration{91 * s, 3602 * s, 3604 * s, 8 * s},
	}, {
		name:   "Retry-After is a lower bound under the jitter",
		script: []try{refuse("3"), refuse(""), refuse("1")},
		want:   []time.Duration{3 * s, 0, 1 * s},
		jitter: func(time.Duration) time.Duration { return 0 },
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.jitter == nil {
				tc.jitter = ceiling
			}
			relay := newScriptedRelay(t, &fakeClock{}, tc.script...)
			if got := waitsOf(t, relay, len(tc.want), tc.jitter); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("waits %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEachTryDialsANewConnection(t *testing.T) {
	// A draining node's 503 leaves the connection open; a tab that asked
	// again on it would never reach another node behind a TCP balancer.
	relay := newScriptedRelay(t, &fakeClock{}, refuse("1"), refuse("1"), refuse("1"), closeAfterWelcome(),
		refuse("1"), drainAfterWelcome(0), refuse(""), refuse(""))
	waitsOf(t, relay, 8, func(time.Duration) time.Duration { return 0 })
	dials := relay.dials()
	seen := map[int]bool{}
	for _, c := range dials {
		if seen[c] {
			t.Fatalf("dials came on connections %v, want a new one each", dials)
		}
		seen[c] = true
	}
	if len(dials) < 8 {
		t.Fatalf("%d dials, want at least 8", len(dials))
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		value string
		want  time.Duration
	}{
		{"", 0},
		{"1", time.Second},
		{" 7 ", 7 * time.Second},
		{"0", 0},
		{"-3", 0},
		{"1.5", 0},
		{"soon", 0},
		{now.Add(5 * time.Second).Format(http.TimeFormat), 5 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"99999999999999999999", 0}, // not an int64: unreadable
		{"9999999999", 1 << 20 * time.Second},
	}
	for _, tc := range tests {
		if got := retryAfter(tc.value, now); got != tc.want {
			t.Errorf("retryAfter(%q) = %v, want %v", tc.value, got, tc.want)
		}
	}
}

func TestFreshDialerKeepsNoConnection(t *testing.T) {
	own := &http.Transport{MaxIdleConns: 7}
	tests := []struct {
		name string
		in   *http.Client
	}{
		{"none", nil},
		{"a client without transport", &http.Client{}},
		{"a client with its own transport", &http.Client{Transport: own}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := freshDialer(tc.in)
			tr, ok := c.Transport.(*http.Transport)
			if !ok || !tr.DisableKeepAlives {
				t.Fatalf("transport %T keeps connections", c.Transport)
			}
			if tc.in != nil && tc.in.Transport == own && (tr == own || tr.MaxIdleConns != 7 || own.DisableKeepAlives) {
				t.Fatal("the caller's transport was changed, or its settings not kept")
			}
		})
	}
}
