package tabsocket

// The handshake of a tab's socket, from the HTTP request to the hello
// (hello.go reads it): the Origin check, the drain's refusal, the gate
// that bounds the upgrades under way, the workers that run them, the
// upgrade itself and the socket's own buffers.

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/tabrelay/tabrelay/internal/clock"
	"github.com/tabrelay/tabrelay/internal/netaddr"
	"github.com/tabrelay/tabrelay/protocol"
)

// ServeHTTP upgrades a tab's request after the Origin check.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	origin := strings.ToLower(r.Header.Get("Origin"))
	if !s.origins[origin] {
		s.cfg.Metrics.Refused.WithLabelValues("origin").Inc()
		s.logRefusedOrigin(origin)
		http.Error(w, "This origin may not connect tabs to the relay.", http.StatusForbidden)
		return
	}
	s.mu.Lock()
	draining := s.draining
	s.mu.Unlock()
	if draining {
		s.cfg.Metrics.Refused.WithLabelValues("draining").Inc()
		// The connection closes with the refusal: a tab's next try must
		// reach another node through the balancer, not this one again on
		// a kept-alive connection.
		w.Header().Set("Connection", "close")
		w.Header().Set("Retry-After", "1")
		http.Error(w, "This relay node is shutting down; connect again.", http.StatusServiceUnavailable)
		return
	}
	if !s.handshakes.enter(r.Context()) {
		s.cfg.Metrics.Refused.WithLabelValues("busy").Inc()
		w.Header().Set("Connection", "close") // the next try may reach another node
		w.Header().Set("Retry-After", "1")
		http.Error(w, "This relay node is busy connecting tabs; connect again.", http.StatusServiceUnavailable)
		return
	}
	// A worker upgrades the socket and reads the hello (handshake.go); the
	// handler returns once the upgrade is answered.
	s.handOff(w, r)
}

func (s *Server) logRefusedOrigin(origin string) {
	if len(origin) > 100 {
		origin = origin[:100]
	}
	s.mu.Lock()
	first := !s.refused[origin] && len(s.refused) < maxLoggedOrigins
	if first {
		s.refused[origin] = true
	}
	s.mu.Unlock()
	if first {
		s.cfg.Logger.Warn("tab origin refused: add it to ALLOWED_ORIGINS if it is your app's (logged once per origin)", "origin", origin)
	}
}

// Defaults of the handshake gate.
const (
	// DefaultMaxHandshakes is how many upgrades a node works on at once,
	// from the upgrade to the welcome: enough for the store's batches to
	// fill (new browsers wait for a bbolt commit of 20-40 ms here: 256 at
	// once carry ~6,000 a second), few enough that a storm of reconnecting
	// tabs (a deploy: every tab of a node at once) does not fill the
	// scheduler, where /ready and the calls would wait behind it (issue 13).
	DefaultMaxHandshakes = 256
	// DefaultHandshakeWait is how long an upgrade waits for one of those
	// before it is refused with 503 and Retry-After (tabs back off from
	// both).
	DefaultHandshakeWait = 5 * time.Second
)

// gate holds the upgrades the node works on; the others wait their turn
// (parked: no CPU, one goroutine and one socket each), up to a bound.
type gate struct {
	slots chan struct{} // nil: no bound
	wait  time.Duration
	clock clock.Clock
}

func newGate(n int, wait time.Duration, c clock.Clock) gate {
	if n <= 0 {
		return gate{}
	}
	return gate{slots: make(chan struct{}, n), wait: wait, clock: c}
}

// enter takes a slot, waiting for one at most g.wait; false: none came in
// time (or the client went away).
func (g gate) enter(ctx context.Context) bool {
	if g.slots == nil {
		return true
	}
	select {
	case g.slots <- struct{}{}:
		return true
	default:
	}
	over := make(chan struct{})
	t := g.clock.AfterFunc(g.wait, func() { close(over) })
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
		return true
	case <-over:
	case <-ctx.Done():
	}
	return false
}

func (g gate) leave() {
	if g.slots != nil {
		<-g.slots
	}
}

// workerIdle is how long a handshake worker waits for the next upgrade
// before it ends.
const workerIdle = 2 * time.Second

// upgrade is a tab's request handed to a handshake worker; done is closed
// once the worker no longer uses w and r.
type upgrade struct {
	w    http.ResponseWriter
	r    *http.Request
	done chan struct{}
}

// handOff runs the handshake of r (Server.handshake) in a handshake
// worker, an idle one or a new one, and returns once the upgrade is
// answered. Workers live on while upgrades keep coming: their stacks grew
// once for the upgrade's deep calls (net/http's sort of the 101's header,
// the library's parsing of the request's), where the goroutine of each new
// connection grew its own anew, copying it twice (runtime.copystack: 5-9 %
// of the relay's CPU while new browsers are admitted, issue 13). There are
// never more workers than handshakes under way, which the gate bounds.
func (s *Server) handOff(w http.ResponseWriter, r *http.Request) {
	u := upgrade{w: w, r: r, done: make(chan struct{})}
	select {
	case s.upgrades <- u:
	default:
		go s.work(u)
	}
	<-u.done
}

// work runs u's handshake, then the next ones handed to it, until none
// came for workerIdle.
func (s *Server) work(u upgrade) {
	idle := time.NewTimer(workerIdle) // real time: it only frees the goroutine
	defer idle.Stop()
	for {
		s.handshake(u)
		idle.Reset(workerIdle)
		select {
		case u = <-s.upgrades:
		case <-idle.C:
			return
		}
	}
}

// handshake upgrades u's request, reads the tab's hello and, once the tab
// is proven, reads the socket in a goroutine of its own; it leaves the
// handshake gate once the tab is welcomed (or refused). It closes u.done
// as soon as the request and its writer are no longer used, which ends
// the request's handler.
func (s *Server) handshake(u upgrade) {
	defer s.handshakes.leave()
	// The Origin was compared exactly above; the library's own check
	// matches host patterns, which is not what SPEC §6 asks.
	hw := &hijacked{ResponseWriter: u.w}
	ws, err := websocket.Accept(hw, u.r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		close(u.done)
		return // Accept has answered the request
	}
	addr := netaddr.Client(u.r, s.cfg.TrustProxy)
	close(u.done)
	s.cfg.Metrics.Open.Inc()
	c := newConn(s, ws, hw.conn, addr)
	if !s.track(c) {
		c.close(protocol.CloseShutdown)
	}
	// The hello is read here; a proven socket is then read in a goroutine
	// of its own: nothing of the upgrade request, its response or
	// net/http's connection stays with an idle tab, and the reader's stack
	// never held the hello's work (the store, the actors), so it stays
	// small (issue 13). Drain waits for s.conns.
	if !c.hello() {
		c.wait()
		s.untrack(c)
		s.cfg.Metrics.Open.Dec()
		return
	}
	go func() {
		defer s.cfg.Metrics.Open.Dec()
		c.serve()
		c.wait()
		s.untrack(c)
	}()
}

// socketBuffer is the size of a socket's read and write buffers. A frame
// larger than that is read or written through with one more system call;
// the relay's messages and most of a tab's are smaller.
const socketBuffer = 1 << 10

// hijacked keeps the TCP connection websocket.Accept takes over, so that
// a socket's end can close it when the library's close handshake does not
// return (DefaultCloseTimeout).
type hijacked struct {
	http.ResponseWriter
	conn net.Conn
}

// Hijack hands the library the connection with buffers of its own, of
// socketBuffer bytes: net/http's are 4 KiB each, and the library keeps
// them for the socket's life (issue 13: the largest part of an idle tab).
// What net/http had read ahead, if anything, stays first in line.
func (h *hijacked) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return c, brw, err
	}
	h.conn = c
	if err := brw.Writer.Flush(); err != nil { // nothing is left there; never lose it
		return c, brw, err
	}
	ahead, _ := brw.Reader.Peek(brw.Reader.Buffered())
	if len(ahead) == 0 {
		return c, bufio.NewReadWriter(bufio.NewReaderSize(c, socketBuffer), bufio.NewWriterSize(c, socketBuffer)), nil
	}
	ahead = bytes.Clone(ahead)
	r := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(ahead), c), max(socketBuffer, len(ahead)))
	// In the buffer, where the library looks for what was read ahead.
	if _, err := r.Peek(len(ahead)); err != nil {
		return c, brw, err
	}
	return c, bufio.NewReadWriter(r, bufio.NewWriterSize(c, socketBuffer)), nil
}

func (h *hijacked) Unwrap() http.ResponseWriter { return h.ResponseWriter }
