package tabsocket_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tabrelay/tabrelay/actors"
	"github.com/tabrelay/tabrelay/internal/clock"
	"github.com/tabrelay/tabrelay/internal/syncbuf"
	"github.com/tabrelay/tabrelay/internal/testwait"
	"github.com/tabrelay/tabrelay/node"
	"github.com/tabrelay/tabrelay/pairing"
	"github.com/tabrelay/tabrelay/protocol"
	"github.com/tabrelay/tabrelay/store/bolt"
	"github.com/tabrelay/tabrelay/tabsocket"
)

const origin = "https://app.example.com"

// patience bounds waits for what must happen; no rule here takes real time.
const patience = 30 * time.Second

type env struct {
	t       testing.TB
	clock   *clock.Fake
	srv     *tabsocket.Server
	http    *httptest.Server
	caller  *actors.Caller
	store   *bolt.Store
	key     []byte
	metrics *tabsocket.Metrics
	logs    *syncbuf.Buffer
}

func newEnv(t testing.TB, tweak func(*tabsocket.Config)) *env {
	t.Helper()
	logs := &syncbuf.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	fake := clock.NewFake(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	system := actors.NewSystem(logger)
	t.Cleanup(system.Shutdown)
	// The actors keep a fake clock of their own: a pairing's idle timer on
	// the sockets' clock would count as the ping or hello timer a test
	// waits for before it moves the clock.
	acfg := actors.Config{Clock: clock.NewFake(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)), Logger: logger,
		Metrics: actors.NewMetrics(nil), MaxCalls: 1000}
	router := actors.NewLocalRouter(system, acfg)
	store, err := bolt.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	key := make([]byte, 32)
	rand.Read(key)
	cfg := tabsocket.Config{AllowedOrigins: []string{origin}, SigningKey: key, Store: store,
		Hub: node.TabHub(actors.NewHub(system, router, acfg)), Clock: fake, Logger: logger, Metrics: tabsocket.NewMetrics(nil)}
	if tweak != nil {
		tweak(&cfg)
	}
	srv, err := tabsocket.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &env{t: t, clock: fake, srv: srv, http: hs, caller: actors.NewCaller(system, router, acfg),
		store: store, key: key, metrics: cfg.Metrics, logs: logs}
}

func newSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (e *env) dial(originHeader string) (*websocket.Conn, *http.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	h := http.Header{}
	if originHeader != "" {
		h.Set("Origin", originHeader)
	}
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.http.URL, "http")+"/tab", &websocket.DialOptions{HTTPHeader: h})
	if c != nil {
		c.SetReadLimit(protocol.MaxMessageBytes)
	}
	return c, resp, err
}

func (e *env) mustDial() *websocket.Conn {
	e.t.Helper()
	c, _, err := e.dial(origin)
	if err != nil {
		e.t.Fatalf("dial: %v", err)
	}
	e.t.Cleanup(func() { c.CloseNow() })
	return c
}

func send(t testing.TB, c *websocket.Conn, v any) {
	t.Helper()
	data, _ := json.Marshal(v)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, data); err != nil {
		t.Fatalf("write: %v", err)
	}
}

func hello(secret, tabID string) protocol.Hello {
	return protocol.Hello{Envelope: protocol.Typed(protocol.TypeHello), Protocol: protocol.Version,
		Secret: secret, TabID: tabID, Bundle: "demo-1"}
}

// read returns the next message, or the close code that ended the socket.
func read(t testing.TB, c *websocket.Conn) (map[string]any, websocket.StatusCode) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	_, data, err := c.Read(ctx)
	if err != nil {
		if code := websocket.CloseStatus(err); code != -1 {
			return nil, code
		}
		t.Fatalf("read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m, -1
}

func (e *env) expectClose(c *websocket.Conn, want protocol.CloseCode) {
	e.t.Helper()
	for {
		m, code := read(e.t, c)
		if m == nil {
			if code != websocket.StatusCode(want) {
				e.t.Fatalf("closed with %d, want %d (%s)", code, want, want.Reason())
			}
			return
		}
	}
}

// welcomed connects a proven tab and returns it with its pairing id.
func (e *env) welcomed(secret, tabID string) (*websocket.Conn, string) {
	e.t.Helper()
	c := e.mustDial()
	send(e.t, c, hello(secret, tabID))
	m, code := read(e.t, c)
	if m == nil || m["type"] != protocol.TypeWelcome {
		e.t.Fatalf("no welcome: %v (close %d)", m, code)
	}
	return c, m["pairing"].(string)
}

func TestOriginIsComparedExactly(t *testing.T) {
	e := newEnv(t, nil)
	for _, o := range []string{"", "https://app.example.com.evil.com", "http://app.example.com", "https://evil.com", "null"} {
		t.Run("origin "+o, func(t *testing.T) {
			_, resp, err := e.dial(o)
			if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
				t.Fatalf("origin %q: err %v, resp %v; want 403", o, err, resp)
			}
		})
	}
	if got := testutil.ToFloat64(e.metrics.Refused.WithLabelValues("origin")); got != 5 {
		t.Fatalf("refused{origin} = %v", got)
	}
	e.dial("https://evil.com") // refused again: logged once
	if n := strings.Count(e.logs.String(), "tab origin refused"); n != 5 || !strings.Contains(e.logs.String(), "https://evil.com") {
		t.Fatalf("refusals logged %d times, want once for each of the 5 origins:\n%s", n, e.logs.String())
	}
	c, _ := e.welcomed(newSecret(), "t1")
	c.Close(websocket.StatusNormalClosure, "")
}

func TestHelloRules(t *testing.T) {
	e := newEnv(t, nil)
	t.Run("no hello within 10s is closed", func(t *testing.T) {
		before := e.clock.Pending()
		c := e.mustDial()
		e.waitTimers(before + 1) // the hello deadline is armed
		e.clock.Advance(9 * time.Second)
		if n := testutil.ToFloat64(e.metrics.Disconnects.WithLabelValues("no_hello")); n != 0 {
			t.Fatal("closed before the 10 s")
		}
		e.clock.Advance(time.Second)
		e.expectClose(c, protocol.CloseNoHello)
	})
	cases := []struct {
		name string
		msg  any
		want protocol.CloseCode
	}{
		{"malformed secret", hello("short", "t1"), protocol.CloseBadSecret},
		{"secret in standard base64", hello(strings.Repeat("+", 43), "t1"), protocol.CloseBadSecret},
		{"no tab id", hello(newSecret(), ""), protocol.CloseBadMessage},
		{"other protocol version", func() protocol.Hello { h := hello(newSecret(), "t1"); h.Protocol = 99; return h }(), protocol.CloseUnsupportedProtocol},
		{"not a hello first", protocol.Focus{Envelope: protocol.Typed(protocol.TypeFocus)}, protocol.CloseBadMessage},
		{"not JSON", json.RawMessage(`{"type":`), protocol.CloseBadMessage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := e.mustDial()
			if raw, ok := tc.msg.(json.RawMessage); ok {
				ctx, cancel := context.WithTimeout(context.Background(), patience)
				defer cancel()
				c.Write(ctx, websocket.MessageText, raw)
			} else {
				send(t, c, tc.msg)
			}
			e.expectClose(c, tc.want)
			if !tc.want.Stop() {
				t.Fatalf("%v should be a stop code", tc.want)
			}
		})
	}
	t.Run("the same secret is the same pairing", func(t *testing.T) {
		secret := newSecret()
		_, id1 := e.welcomed(secret, "t1")
		_, id2 := e.welcomed(secret, "t2")
		_, id3 := e.welcomed(newSecret(), "t1")
		if id1 != id2 || id1 == id3 {
			t.Fatalf("pairings %s %s %s", id1, id2, id3)
		}
		if strings.Contains(id1, secret[:8]) {
			t.Fatal("the pairing id shows the secret")
		}
	})
}

// waitTimers waits until n timers of the fake clock are armed (the ones of
// the connections the test made), so that Advance finds them.
func (e *env) waitTimers(n int) {
	e.t.Helper()
	eventually(e.t, func() bool { return e.clock.Pending() >= n }, "%d timers armed", n)
}

var eventually = testwait.Eventually

func TestTabClosingItsSocketReleasesIt(t *testing.T) {
	e := newEnv(t, nil)
	c, pairing := e.welcomed(newSecret(), "t1")
	c.Close(websocket.StatusNormalClosure, "tab closed")
	eventually(t, func() bool { return e.srv.Conns() == 0 }, "the socket is released")
	eventually(t, func() bool {
		s, err := e.caller.Inspect(context.Background(), pairing)
		return err == nil && len(s.Tabs) == 0
	}, "the pairing forgets the tab")
}

func TestPingTimeout(t *testing.T) {
	e := newEnv(t, nil)
	c, _ := e.welcomed(newSecret(), "t1")
	e.waitTimers(1) // the ping timer is armed
	e.clock.Advance(25 * time.Second)
	if m, _ := read(t, c); m == nil || m["type"] != protocol.TypePing {
		t.Fatalf("got %v, want a ping", m)
	}
	send(t, c, map[string]string{"type": protocol.TypePong})
	e.waitTouched(c)
	e.waitTimers(1)
	e.clock.Advance(25 * time.Second) // answered in time: pinged again
	if m, _ := read(t, c); m == nil || m["type"] != protocol.TypePing {
		t.Fatalf("got %v, want a second ping", m)
	}
	e.waitTimers(1)
	e.clock.Advance(25 * time.Second) // silent for two intervals
	// A tab silent that long is presumed gone: the connection just ends,
	// counted as ping_timeout.
	if _, code := readEnd(t, c); code != -1 {
		t.Fatalf("closed with a close frame %d; want the connection closed at once", code)
	}
	if n := testutil.ToFloat64(e.metrics.Disconnects.WithLabelValues("ping_timeout")); n != 1 {
		t.Fatalf("ping_timeout disconnects = %v", n)
	}
}

// TestPongsAloneKeepATabOpen: a tab that says nothing but its pongs stays
// open for as long as it answers the pings, its pong written as the tab
// clients write it (read by its bytes) or spelled otherwise (decoded);
// once it stops answering it is closed two intervals after its last pong
// (tab-protocol §13).
func TestPongsAloneKeepATabOpen(t *testing.T) {
	for _, tc := range []struct{ name, pong string }{
		{"as the clients write it", `{"type":"pong"}`},
		{"spelled otherwise", `{ "type": "pong" }`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			c, _ := e.welcomed(newSecret(), "t1")
			ping := func() {
				t.Helper()
				e.waitTimers(1)
				e.clock.Advance(tabsocket.DefaultPingInterval)
				if m, code := read(t, c); m == nil || m["type"] != protocol.TypePing {
					t.Fatalf("got %v (close %d), want a ping", m, code)
				}
			}
			for range 4 {
				ping()
				if err := c.Write(context.Background(), websocket.MessageText, []byte(tc.pong)); err != nil {
					t.Fatal(err)
				}
				eventually(t, func() bool {
					r := e.srv.LastReads()
					return len(r) == 1 && r[0].Equal(e.clock.Now())
				}, "the pong read")
			}
			ping() // unanswered: an interval of silence
			e.waitTimers(1)
			e.clock.Advance(tabsocket.DefaultPingInterval) // the second
			if _, code := readEnd(t, c); code != -1 {
				t.Fatalf("closed with a close frame %d; want the connection closed at once", code)
			}
			if n := testutil.ToFloat64(e.metrics.Disconnects.WithLabelValues("ping_timeout")); n != 1 {
				t.Fatalf("ping_timeout disconnects = %v", n)
			}
		})
	}
}

// readEnd reads until the socket ends and returns the close code the
// relay sent, or -1 when the connection ended without a close frame.
func readEnd(t *testing.T, c *websocket.Conn) (error, websocket.StatusCode) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	for {
		if _, _, err := c.Read(ctx); err != nil {
			if ctx.Err() != nil {
				t.Fatal("the socket did not end")
			}
			return err, websocket.CloseStatus(err)
		}
	}
}

// waitTouched makes sure the server read what the tab sent: an unknown
// message is answered, so its answer comes after the earlier message.
func (e *env) waitTouched(c *websocket.Conn) {
	e.t.Helper()
	send(e.t, c, map[string]string{"type": "x-probe", "ref": "probe"})
	for {
		m, _ := read(e.t, c)
		if m != nil && m["ref"] == "probe" {
			return
		}
	}
}

func TestUnknownRequestsAreAnsweredNotClosed(t *testing.T) {
	e := newEnv(t, nil)
	c, _ := e.welcomed(newSecret(), "t1")
	send(t, c, map[string]string{"type": protocol.TypeListConnections, "ref": "r1"})
	m, _ := read(t, c)
	if m == nil || m["type"] != protocol.TypeError || m["ref"] != "r1" || m["code"] != protocol.ErrCodeUnsupported {
		t.Fatalf("got %v", m)
	}
}

func TestTooManyMessagesCloses(t *testing.T) {
	e := newEnv(t, func(c *tabsocket.Config) { c.RateBurst = 20; c.RatePerSec = 1 })
	c, _ := e.welcomed(newSecret(), "t1")
	for i := 0; i < 25; i++ {
		data, _ := json.Marshal(map[string]string{"type": protocol.TypePong})
		if c.Write(context.Background(), websocket.MessageText, data) != nil {
			break
		}
	}
	// The close frame races the tab's own writes: a tab still sending
	// may see the connection end before the frame. The relay's count says
	// why it closed either way.
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	for {
		if _, _, err := c.Read(ctx); err != nil {
			if code := websocket.CloseStatus(err); code != -1 && code != websocket.StatusCode(protocol.CloseTooFast) {
				t.Fatalf("closed with %d, want %d", code, protocol.CloseTooFast)
			}
			break
		}
	}
	if n := testutil.ToFloat64(e.metrics.Disconnects.WithLabelValues("too_fast")); n != 1 {
		t.Fatalf("too_fast disconnects = %v", n)
	}
}

func TestOversizedMessageCloses(t *testing.T) {
	e := newEnv(t, nil)
	c, _ := e.welcomed(newSecret(), "t1")
	big := `{"type":"pong","pad":"` + strings.Repeat("x", protocol.MaxMessageBytes) + `"}`
	c.Write(context.Background(), websocket.MessageText, []byte(big))
	e.expectClose(c, protocol.CloseTooBig)
}

// TestDrainSpreadsReconnectsAndMarksTheBrowsers (issue 25, item 2): a
// drain spreads its tabs' reconnects over the time admitting them takes
// at DrainRate, within the window (five tabs need not wait 30 s), and
// before telling them keeps a mark of each browser in the store, until
// when its tabs are expected back: their delay and DrainedBackWithin.
func TestDrainSpreadsReconnectsAndMarksTheBrowsers(t *testing.T) {
	e := newEnv(t, nil)
	var conns []*websocket.Conn
	var pairings []string
	for i := 0; i < 5; i++ {
		c, p := e.welcomed(newSecret(), "t1")
		conns, pairings = append(conns, c), append(pairings, p)
	}
	done := make(chan struct{})
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		e.srv.Drain(ctx, 30*time.Second)
		close(done)
	}()
	spread := tabsocket.DrainSpread(len(conns), 30*time.Second)
	now := e.clock.Now()
	for i, c := range conns {
		m, _ := read(t, c)
		if m == nil || m["type"] != protocol.TypeDrain {
			t.Fatalf("got %v, want drain", m)
		}
		delay := time.Duration(m["reconnectAfterMs"].(float64)) * time.Millisecond
		if delay < 0 || delay > spread {
			t.Fatalf("reconnect after %v, outside the spread of %v for %d tabs", delay, spread, len(conns))
		}
		e.expectClose(c, protocol.CloseShutdown)
		d, found, err := e.store.Drained(context.Background(), pairings[i], now)
		back := now.Add(delay + tabsocket.DrainedBackWithin)
		if err != nil || !found || !d.At.Equal(now) || d.Until.Before(back) || d.Until.After(back.Add(time.Millisecond)) {
			t.Fatalf("the mark of browser %d: %+v %v %v, want drained now, back by %v", i, d, found, err, back)
		}
	}
	<-done
	if _, resp, err := e.dial(origin); err == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a tab connected to a draining node: %v", err)
	}
}

// TestADrainsSpreadGrowsWithItsTabs: the spread is what admitting the
// tabs at DrainRate takes, capped by the window.
func TestADrainsSpreadGrowsWithItsTabs(t *testing.T) {
	window := 10 * time.Second
	for _, tc := range []struct {
		tabs int
		want time.Duration
	}{
		{0, 0},
		{40, 40 * time.Second / tabsocket.DrainRate},
		{19_000, 19_000 * time.Second / tabsocket.DrainRate},
		{100_000, window},
	} {
		if got := tabsocket.DrainSpread(tc.tabs, window); got != tc.want {
			t.Errorf("%d tabs: spread %v, want %v", tc.tabs, got, tc.want)
		}
	}
}

func TestSlowTabIsDisconnectedWithoutBlockingThePairing(t *testing.T) {
	// The queue holds every call the test makes: the calls moved to the
	// fast tab arrive there at once (its writer encodes them). The slow tab
	// is the one whose writes stop: its frame is not taken in time.
	e := newEnv(t, func(c *tabsocket.Config) { c.SendQueue, c.WriteTimeout = 128, 500*time.Millisecond })
	secret := newSecret()
	slow, pairing := e.welcomed(secret, "slow")
	fast, _ := e.welcomed(secret, "fast")
	send(t, slow, protocol.Focus{Envelope: protocol.Typed(protocol.TypeFocus), At: time.Now().UnixMilli()})
	e.waitTouched(slow)
	// The slow tab reads nothing from here on. Calls with big arguments fill
	// the socket's buffers, and its writer waits.
	arg, _ := json.Marshal(map[string]string{"pad": strings.Repeat("x", 1<<20)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := 0; i < 64; i++ {
		go e.caller.Call(ctx, protocol.CallRequest{Pairing: pairing, Tool: "echo", Arguments: arg}, nil)
	}
	eventually(t, func() bool { return testutil.ToFloat64(e.metrics.Disconnects.WithLabelValues("slow")) >= 1 }, "the slow tab is disconnected")
	// The pairing is not blocked: its calls move to the fast tab, which
	// reads everything as it comes, as a tab that keeps up does.
	var calls atomic.Int32
	go func() {
		for {
			_, data, err := fast.Read(context.Background())
			if err != nil {
				return
			}
			if strings.Contains(string(data[:min(len(data), 40)]), `"type":"call"`) {
				calls.Add(1)
			}
		}
	}()
	eventually(t, func() bool { return calls.Load() >= 3 }, "calls reach the fast tab")
	snap, err := e.caller.Inspect(context.Background(), pairing)
	if err != nil || len(snap.Tabs) != 1 || snap.Tabs[0] != "fast" {
		t.Fatalf("tabs after the slow one left: %+v %v", snap, err)
	}
}

func TestATabOfAnotherBundleMakesHostsListAgain(t *testing.T) {
	changed := make(chan string, 4)
	e := newEnv(t, func(c *tabsocket.Config) {
		c.BundleVersion = "demo-1"
		c.ToolsChanged = func(p string) { changed <- p }
	})
	_, _ = e.welcomed(newSecret(), "same") // hello says demo-1
	select {
	case p := <-changed:
		t.Fatalf("a tab of the relay's own bundle changed the tools of %s", p)
	default:
	}
	c := e.mustDial()
	h := hello(newSecret(), "newer")
	h.Bundle = "demo-2"
	send(t, c, h)
	m, _ := read(t, c)
	select {
	case p := <-changed:
		if p != m["pairing"] {
			t.Fatalf("tools changed for %s, want %s", p, m["pairing"])
		}
	case <-time.After(patience):
		t.Fatal("a tab of another bundle did not make hosts list the tools anew")
	}
}

// TestAFocusInTheFutureCountsAsNow: a tab that says it was focused a year
// from now (in its hello or a focus) is put first as if focused now, and
// the next tab the person focuses goes before it.
func TestAFocusInTheFutureCountsAsNow(t *testing.T) {
	e := newEnv(t, nil)
	secret := newSecret()
	future := e.clock.Now().Add(365 * 24 * time.Hour).UnixMilli()
	h := hello(secret, "ahead")
	h.FocusedAt = future
	a := e.mustDial()
	send(t, a, h)
	if m, code := read(t, a); m == nil || m["type"] != protocol.TypeWelcome {
		t.Fatalf("no welcome: %v %d", m, code)
	}
	b, pairing := e.welcomed(secret, "honest")
	order := func() []string {
		s, err := e.caller.Inspect(context.Background(), pairing)
		if err != nil {
			return nil
		}
		return s.Tabs
	}
	eventually(t, func() bool { o := order(); return len(o) == 2 && o[0] == "ahead" }, "the tab of the hello's focus first")
	e.clock.Advance(time.Second)
	send(t, b, protocol.Focus{Envelope: protocol.Typed(protocol.TypeFocus)})
	eventually(t, func() bool { o := order(); return len(o) == 2 && o[0] == "honest" }, "the tab focused last first, got %v", order())
	e.clock.Advance(time.Second)
	send(t, a, protocol.Focus{Envelope: protocol.Typed(protocol.TypeFocus), At: future})
	eventually(t, func() bool { o := order(); return len(o) == 2 && o[0] == "ahead" }, "the tab focused last first, got %v", order())
	e.clock.Advance(time.Second)
	send(t, b, protocol.Focus{Envelope: protocol.Typed(protocol.TypeFocus)})
	eventually(t, func() bool { o := order(); return len(o) == 2 && o[0] == "honest" }, "a focus in the future does not outrank a later one, got %v", order())
}

// TestNewPairingsAreLimitedPerAddress: an address that made its new
// pairings for now gets CloseUnavailable for the hello of one more, with
// the wait until it may come back in the reason (issue 23), counted in
// tabrelay_tab_new_pairings_refused_total; no record is stored for it,
// while a browser the relay knows still gets in; the limit refills at its
// rate. Another node on the same store shares the count.
func TestNewPairingsAreLimitedPerAddress(t *testing.T) {
	limit := func(c *tabsocket.Config) { c.NewPairingsBurst, c.NewPairingsPerHour = 2, 2 }
	e := newEnv(t, limit)
	other := newEnv(t, func(c *tabsocket.Config) { limit(c); c.Store = e.store }) // a second node
	if n := testutil.ToFloat64(e.metrics.NewPairingsRefused); n != 0 {
		t.Fatalf("refusals before any: %v", n)
	}
	known := newSecret()
	e.welcomed(known, "a")
	other.welcomed(newSecret(), "b")
	over := newSecret()
	c := e.mustDial()
	send(t, c, hello(over, "c"))
	if reason := e.expectCloseReason(c, protocol.CloseUnavailable); protocol.RetryIn(reason) != 30*time.Minute {
		t.Fatalf("the refusal's reason %q, want a wait of 30 minutes", reason)
	}
	if n := testutil.ToFloat64(e.metrics.NewPairingsRefused); n != 1 {
		t.Fatalf("tabrelay_tab_new_pairings_refused_total = %v, want 1", n)
	}
	id, _ := pairing.Derive(e.key, mustSecret(t, over))
	if ok, err := e.store.HasPairing(context.Background(), id); ok || err != nil {
		t.Fatalf("the refused pairing was stored: %v %v", ok, err)
	}
	// The second node did not count it (it made the second), but learns
	// the address is spent from the store, and undoes the record it made.
	c = other.mustDial()
	send(t, c, hello(over, "c"))
	other.expectClose(c, protocol.CloseUnavailable)
	if ok, err := e.store.HasPairing(context.Background(), id); ok || err != nil {
		t.Fatalf("the pairing refused on the second node was left stored: %v %v", ok, err)
	}
	e.welcomed(known, "a2")
	e.clock.Advance(30 * time.Minute)
	e.welcomed(over, "c")
}

// TestAnOfficeBehindOneAddressGetsIn (issue 23): with the default limits,
// the 400 people of an office behind one NAT who open the app on the same
// morning all get in (the limit was 300 an hour: the 301st was refused
// and retried blindly).
func TestAnOfficeBehindOneAddressGetsIn(t *testing.T) {
	e := newEnv(t, nil)
	for i := range 400 {
		c := e.mustDial()
		send(t, c, hello(newSecret(), "office"))
		if m, code := read(t, c); m == nil || m["type"] != protocol.TypeWelcome {
			t.Fatalf("person %d of the office: no welcome (close %d)", i+1, code)
		}
		c.CloseNow()
	}
	if n := testutil.ToFloat64(e.metrics.NewPairingsRefused); n != 0 {
		t.Fatalf("%v new browsers of the office refused", n)
	}
}

// expectCloseReason waits for the socket's close with want and returns its
// reason.
func (e *env) expectCloseReason(c *websocket.Conn, want protocol.CloseCode) string {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	for {
		_, _, err := c.Read(ctx)
		if err == nil {
			continue
		}
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.StatusCode(want) {
			e.t.Fatalf("closed with %v, want %d", err, want)
		}
		return ce.Reason
	}
}

func mustSecret(t *testing.T, s string) []byte {
	t.Helper()
	b, err := pairing.ParseSecret(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// listed is the authorization server's side as the pushes read it: a
// browser's list that grows by one connection at each change, and how
// often it was read. The person's decisions are not needed here.
type listed struct{ size, reads atomic.Int32 }

var errNotHere = protocol.ErrUnsupported.With("Not in this test.")

func (*listed) ConnectInfo(context.Context, string, string, string) (protocol.ConnectInfo, error) {
	return protocol.ConnectInfo{}, errNotHere
}
func (*listed) ApproveVia(context.Context, string, string, string, []protocol.ScopeEntry, string) (protocol.ConnectionInfo, string, error) {
	return protocol.ConnectionInfo{}, "", errNotHere
}
func (*listed) Decline(context.Context, string, string, string) error { return errNotHere }
func (*listed) Forget(context.Context, string, string) error          { return errNotHere }
func (*listed) SetScope(context.Context, string, string, []protocol.ScopeEntry) (protocol.ConnectionInfo, error) {
	return protocol.ConnectionInfo{}, errNotHere
}

func (l *listed) Connections(context.Context, string) ([]protocol.ConnectionInfo, error) {
	l.reads.Add(1)
	out := make([]protocol.ConnectionInfo, l.size.Load())
	for i := range out {
		out[i] = protocol.ConnectionInfo{ID: fmt.Sprintf("conn-%d", i)}
	}
	return out, nil
}

// TestConnectionsPushesAreCoalesced (issue 23 §2): changes that come one
// after another, each after the last push was read, made one push each,
// the whole list every time. Now a browser's pushes are PushGap apart:
// with the clock still, the first change is pushed and every later one
// waits for the gap, after which one push carries them all.
func TestConnectionsPushesAreCoalesced(t *testing.T) {
	l := &listed{}
	e := newEnv(t, func(c *tabsocket.Config) { c.Connections = l })
	c, pairing := e.welcomed(newSecret(), "t1")
	timers := e.clock.Pending()
	const changes = 20
	for i := 1; i <= changes; i++ {
		l.size.Add(1)
		e.srv.PushConnections(pairing)
		// Until this change was read, or a gap holds it back.
		testwait.Eventually(t, func() bool { return l.reads.Load() == int32(i) || e.clock.Pending() > timers },
			"change %d neither read nor held back", i)
	}
	e.clock.Advance(tabsocket.PushGap)
	pushes := 0
	for {
		m, code := read(t, c)
		if m == nil {
			t.Fatalf("socket closed (%d)", code)
		}
		if m["type"] != protocol.TypeConnections {
			continue
		}
		pushes++
		if len(m["connections"].([]any)) == changes {
			break
		}
	}
	if pushes != 2 || l.reads.Load() != 2 {
		t.Fatalf("%d changes made %d pushes (%d reads); want 2: the first, and one after the gap", changes, pushes, l.reads.Load())
	}
	// Nothing changed since: the next gap pushes nothing.
	e.clock.Advance(tabsocket.PushGap)
	e.waitTouched(c)
	if n := l.reads.Load(); n != 2 {
		t.Fatalf("a gap with no change read the list again (%d reads)", n)
	}
}
