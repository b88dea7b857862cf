package tabsocket_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/tabrelay/tabrelay/protocol"
	"github.com/tabrelay/tabrelay/tabsocket"
)

// rawTab is a tab whose TCP connection the test holds, to end it the ways a
// network or a browser does: FIN, RST, or bytes RFC 6455 forbids.
type rawTab struct {
	ws  *websocket.Conn
	tcp *net.TCPConn
}

func (e *env) dialRaw() *rawTab {
	e.t.Helper()
	var tcp *net.TCPConn
	tr := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			tcp = c.(*net.TCPConn)
		}
		return c, err
	}}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	h := http.Header{"Origin": {origin}}
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.http.URL, "http")+"/tab",
		&websocket.DialOptions{HTTPHeader: h, HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		e.t.Fatalf("dial: %v", err)
	}
	ws.SetReadLimit(protocol.MaxMessageBytes)
	return &rawTab{ws: ws, tcp: tcp}
}

// fin half-closes the connection (the relay reads EOF) and closes it once
// the relay closed its side.
func (r *rawTab) fin(t *testing.T) {
	t.Helper()
	if err := r.tcp.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	r.waitEOF(t)
}

// rst resets the connection (SO_LINGER 0).
func (r *rawTab) rst(t *testing.T) {
	t.Helper()
	r.tcp.SetLinger(0)
	r.tcp.Close()
}

// waitEOF reads raw bytes until the relay closed the connection, then
// closes the tab's side.
func (r *rawTab) waitEOF(t *testing.T) {
	t.Helper()
	r.tcp.SetReadDeadline(time.Now().Add(patience))
	_, err := io.Copy(io.Discard, r.tcp)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the relay did not close the connection")
	}
	r.tcp.Close()
}

// welcome sends a hello and reads the welcome.
func (r *rawTab) welcome(t *testing.T, secret string) {
	t.Helper()
	send(t, r.ws, hello(secret, "t1"))
	if m, code := read(t, r.ws); m == nil || m["type"] != protocol.TypeWelcome {
		t.Fatalf("no welcome: %v (close %d)", m, code)
	}
}

// frame writes one client frame by hand; masked false breaks RFC 6455 §5.1.
func (r *rawTab) frame(t *testing.T, payload string, masked bool) {
	t.Helper()
	b := []byte{0x81} // FIN, text
	if masked {
		b = append(b, 0x80|byte(len(payload)), 0, 0, 0, 0) // a zero mask key leaves the payload as is
	} else {
		b = append(b, byte(len(payload)))
	}
	if _, err := r.tcp.Write(append(b, payload...)); err != nil {
		t.Fatal(err)
	}
}

// hugeFrameHeader is a masked client frame header of opcode announcing
// 2^40 bytes of payload (zero mask key).
func hugeFrameHeader(opcode byte) []byte {
	return []byte{opcode, 0x80 | 127, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}
}

func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd here")
	}
	return len(fds)
}

type baseline struct{ fds, goroutines int }

func measure(t *testing.T) baseline {
	return baseline{fds: openFDs(t), goroutines: runtime.NumGoroutine()}
}

// backTo waits until the process's open fds and goroutines are back to b
// and no socket is open on the server.
func (e *env) backTo(t *testing.T, b baseline) {
	t.Helper()
	var now baseline
	deadline := time.Now().Add(patience)
	for {
		now = measure(t)
		if now.fds <= b.fds && now.goroutines <= b.goroutines && e.srv.Conns() == 0 &&
			testutil.ToFloat64(e.metrics.Open) == 0 {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("not released: fds %d (baseline %d), goroutines %d (baseline %d), sockets %d, open gauge %v\n%s",
				now.fds, b.fds, now.goroutines, b.goroutines, e.srv.Conns(), testutil.ToFloat64(e.metrics.Open),
				buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Every way a tab socket can end releases its connection and its
// goroutines, and a code the relay chose arrives as that code.
func TestEverySocketEndReleasesIt(t *testing.T) {
	// A close handshake that does not finish is cut after a second here
	// (10 s in the product): the stalling peers below wait on it.
	e := newEnv(t, func(c *tabsocket.Config) { c.SendQueue = 4; c.CloseTimeout = time.Second })
	big, _ := json.Marshal(map[string]string{"pad": strings.Repeat("x", 1<<20)})
	// call starts a call to the pairing and returns a function that ends it
	// and waits for it.
	call := func(pairing string, args json.RawMessage) (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.caller.Call(ctx, protocol.CallRequest{Pairing: pairing, Tool: "echo", Arguments: args}, nil)
		}()
		return func() { cancel(); wg.Wait() }
	}
	// registered waits until the pairing holds the tab (the welcome is
	// sent before), so that a call goes to it.
	registered := func(pairing string) string {
		eventually(t, func() bool {
			s, err := e.caller.Inspect(context.Background(), pairing)
			return err == nil && len(s.Tabs) == 1
		}, "the pairing holds the tab")
		return pairing
	}
	readCall := func(r *rawTab) {
		for {
			m, code := read(t, r.ws)
			if m == nil {
				t.Fatalf("closed with %d before the call came", code)
			}
			if m["type"] == protocol.TypeCall {
				return
			}
		}
	}
	expectCode := func(r *rawTab, want protocol.CloseCode) {
		e.expectClose(r.ws, want)
		r.waitEOF(t)
	}
	cases := []struct {
		name string
		run  func(t *testing.T, r *rawTab)
		// ends is the tabrelay_tab_socket_ends_total label it must count.
		ends string
	}{
		{"FIN before the hello", func(t *testing.T, r *rawTab) { r.fin(t) }, "dropped"},
		{"RST before the hello", func(t *testing.T, r *rawTab) { r.rst(t) }, "dropped"},
		{"FIN during the hello", func(t *testing.T, r *rawTab) {
			r.tcp.Write([]byte{0x81, 0x80 | 40, 0, 0}) // half a frame header
			r.fin(t)
		}, "dropped"},
		{"RST during the hello", func(t *testing.T, r *rawTab) {
			r.tcp.Write([]byte{0x81, 0x80 | 40, 0, 0})
			r.rst(t)
		}, "dropped"},
		{"FIN after the welcome", func(t *testing.T, r *rawTab) {
			r.welcome(t, newSecret())
			r.fin(t)
		}, "dropped"},
		{"RST after the welcome", func(t *testing.T, r *rawTab) {
			r.welcome(t, newSecret())
			r.rst(t)
		}, "dropped"},
		{"RST with a call in flight", func(t *testing.T, r *rawTab) {
			send(t, r.ws, hello(newSecret(), "t1"))
			m, _ := read(t, r.ws)
			stop := call(registered(m["pairing"].(string)), json.RawMessage(`{}`))
			defer stop()
			readCall(r)
			r.rst(t)
		}, "dropped"},
		{"send queue full", func(t *testing.T, r *rawTab) {
			send(t, r.ws, hello(newSecret(), "t1"))
			m, _ := read(t, r.ws)
			// The tab reads nothing more: big calls fill the connection's
			// buffers, then the queue of 4.
			var stops []func()
			pairing := registered(m["pairing"].(string))
			for range 16 {
				stops = append(stops, call(pairing, big))
			}
			defer func() {
				for _, s := range stops {
					s()
				}
			}()
			eventually(t, func() bool { return testutil.ToFloat64(e.metrics.Disconnects.WithLabelValues("slow")) >= 1 },
				"the slow tab is closed")
			r.rst(t)
		}, "relay_abort"},
		{"a close frame from the tab", func(t *testing.T, r *rawTab) {
			r.welcome(t, newSecret())
			if err := r.ws.Close(websocket.StatusNormalClosure, "tab closed"); err != nil {
				t.Fatalf("close handshake: %v", err)
			}
			r.waitEOF(t)
		}, "tab_close"},
		{"relay stop code: a message without type", func(t *testing.T, r *rawTab) {
			r.welcome(t, newSecret())
			send(t, r.ws, map[string]string{"ref": "x"})
			expectCode(r, protocol.CloseBadMessage)
		}, "relay_close"},
		{"relay stop code: a bad secret", func(t *testing.T, r *rawTab) {
			send(t, r.ws, hello("short", "t1"))
			expectCode(r, protocol.CloseBadSecret)
		}, "relay_close"},
		{"relay stop code: a message too big", func(t *testing.T, r *rawTab) {
			r.welcome(t, newSecret())
			r.ws.Write(context.Background(), websocket.MessageText, []byte(`{"type":"pong","pad":"`+strings.Repeat("x", protocol.MaxMessageBytes)+`"}`))
			expectCode(r, protocol.CloseTooBig)
		}, "relay_close"},
		{"no hello in time", func(t *testing.T, r *rawTab) {
			e.waitTimers(1)
			e.clock.Advance(tabsocket.DefaultHelloTimeout)
			expectCode(r, protocol.CloseNoHello)
		}, "relay_close"},
		{"an unmasked frame", func(t *testing.T, r *rawTab) {
			r.welcome(t, newSecret())
			r.frame(t, `{"type":"pong"}`, false)
			if _, code := readEnd(t, r.ws); code != websocket.StatusProtocolError {
				t.Fatalf("closed with %d, want 1002", code)
			}
			r.waitEOF(t)
		}, "protocol_error"},
		{"an unmasked frame before the hello", func(t *testing.T, r *rawTab) {
			r.frame(t, `{"type":"hello"}`, false)
			r.waitEOF(t)
		}, "protocol_error"},
		{"a huge frame announced before the hello, then silence", func(t *testing.T, r *rawTab) {
			// 2^40 bytes announced, 5,000 sent: the library skips the rest
			// of the payload during its close handshake with no deadline.
			// The peer reads raw bytes and never answers the close frame.
			r.tcp.Write(append(hugeFrameHeader(0x81), make([]byte, 5000)...))
			r.waitEOF(t)
		}, "relay_no_answer"},
		{"a stop code, then a huge frame announced and silence", func(t *testing.T, r *rawTab) {
			r.welcome(t, newSecret())
			send(t, r.ws, map[string]string{"ref": "x"}) // 4103
			r.tcp.Write(append(hugeFrameHeader(0x82), make([]byte, 5000)...))
			r.waitEOF(t)
		}, "relay_no_answer"},
		{"a peer that stops answering pings", func(t *testing.T, r *rawTab) {
			r.welcome(t, newSecret())
			e.waitTimers(1) // the ping
			e.clock.Advance(tabsocket.DefaultPingInterval)
			e.waitTimers(1)
			e.clock.Advance(tabsocket.DefaultPingInterval) // two intervals of silence
			r.waitEOF(t)
		}, "relay_abort"},
		{"a drain", func(t *testing.T, r *rawTab) {
			r.welcome(t, newSecret())
			// Drain refuses tabs from then on; this one is the last case.
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			defer cancel()
			go e.srv.Drain(ctx, 0)
			if m, _ := read(t, r.ws); m == nil || m["type"] != protocol.TypeDrain {
				t.Fatalf("got %v, want drain", m)
			}
			expectCode(r, protocol.CloseShutdown)
		}, "relay_close"},
	}
	// Warm up: the first pairing starts what stays (the actor system's own
	// goroutines), which is not a socket's to release.
	w := e.dialRaw()
	w.welcome(t, newSecret())
	w.ws.Close(websocket.StatusNormalClosure, "")
	e.backTo(t, measure(t))
	var base baseline
	t.Run("baseline", func(t *testing.T) { base = measure(t) }) // counts a subtest's own goroutine
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := testutil.ToFloat64(e.metrics.Ends.WithLabelValues(tc.ends))
			r := e.dialRaw()
			tc.run(t, r)
			e.backTo(t, base)
			if got := testutil.ToFloat64(e.metrics.Ends.WithLabelValues(tc.ends)); got != before+1 {
				t.Fatalf("socket ends{how=%q} went from %v to %v", tc.ends, before, got)
			}
			t.Logf("fds %d, goroutines %d after (baseline %d, %d)", openFDs(t), runtime.NumGoroutine(), base.fds, base.goroutines)
		})
	}
}

// A stop code the relay chooses right after writing to the tab arrives as
// that code: the close handshake is never cut short by the relay's own
// cancellation (it was, 20 times in 400).
func TestStopCodeArrivesRightAfterAWrite(t *testing.T) {
	// 400 new browsers of one address: no limit on new pairings here.
	e := newEnv(t, func(c *tabsocket.Config) { c.NewPairingsPerHour = -1 })
	for i := range 400 {
		r := e.dialRaw()
		r.welcome(t, newSecret())
		send(t, r.ws, map[string]string{"ref": "x"}) // no type: 4103
		_, code := readEnd(t, r.ws)
		if code != websocket.StatusCode(protocol.CloseBadMessage) {
			t.Fatalf("run %d: the tab saw %d, want %d", i, code, protocol.CloseBadMessage)
		}
		r.tcp.Close()
	}
}
