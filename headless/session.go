package headless

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/tabrelay/tabrelay/protocol"
)

// Timing of one socket.
const (
	dialTimeout  = 15 * time.Second
	writeTimeout = 10 * time.Second
	// welcomeTimeout bounds the wait for the welcome after the hello (the
	// relay's own hello deadline is 10 s, its store's answer 5 s).
	welcomeTimeout = 20 * time.Second
	// missedPings is how many ping intervals of silence make the tab give
	// up a socket whose relay went away without closing it.
	missedPings = 3
	// outboxMax bounds the messages kept for the next socket.
	outboxMax = 1000
)

// session is one socket: one reader (run) and a mutex around writes.
type session struct {
	t      *Tab
	ws     *websocket.Conn
	wmu    sync.Mutex // serializes writes
	once   sync.Once
	closed chan struct{} // closed when the close handshake is over
	drain  atomic.Int64  // the drain delay in ms, -1 until a drain came

	// Used by the reader only.
	welcomed time.Time
	idle     time.Duration // the longest silence before giving up
}

// sessionEnd is how a socket ended.
type sessionEnd struct {
	code   protocol.CloseCode // 0 when it ended without a close frame
	reason string
	drain  time.Duration // the delay a drain asked for; < 0 when none came
	// welcomed is true when a welcome came; up is how long the socket
	// lived after it.
	welcomed bool
	up       time.Duration
	// status is the HTTP status of a refused handshake (0: none came);
	// retryAfter is its Retry-After on a 503 (0: none).
	status     int
	retryAfter time.Duration
	// refused is true when the handshake got 403: the origin is not allowed.
	refused bool
}

// connect dials the relay, runs one socket until it ends, and says how.
func (t *Tab) connect(ctx context.Context) sessionEnd {
	end := sessionEnd{drain: -1}
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	ws, resp, err := websocket.Dial(dctx, t.url, &websocket.DialOptions{
		HTTPClient: t.opts.Dialer,
		HTTPHeader: http.Header{"Origin": {t.opts.Origin}},
	})
	cancel()
	if err != nil {
		if resp != nil {
			end.status = resp.StatusCode
			if end.status == http.StatusServiceUnavailable {
				end.retryAfter = retryAfter(resp.Header.Get("Retry-After"), t.now())
			}
		}
		t.log.Info("tab could not connect", "status", end.status, "err", err)
		end.refused = end.status == http.StatusForbidden
		return end
	}
	ws.SetReadLimit(protocol.MaxMessageBytes)
	s := &session{t: t, ws: ws, closed: make(chan struct{}), idle: welcomeTimeout}
	s.drain.Store(-1)
	stop := context.AfterFunc(ctx, func() { s.closeWith(websocket.StatusNormalClosure, "tab closed") })
	end.code, end.reason = s.run()
	stop()
	t.detach(s)
	s.closeWith(websocket.StatusNormalClosure, "tab closed")
	<-s.closed
	if ms := s.drain.Load(); ms >= 0 {
		end.drain = time.Duration(ms) * time.Millisecond
	}
	if !s.welcomed.IsZero() {
		end.welcomed, end.up = true, t.now().Sub(s.welcomed)
	}
	if end.code != 0 && end.reason == "" {
		end.reason = end.code.Reason()
	}
	return end
}

// freshDialer returns the client of the handshakes: c, or a default one,
// with keep-alives off. A draining node answers /tab with 503; a client
// that kept that connection would ask the same node again on every try,
// and a TCP balancer could never move the tab (issue 17).
func freshDialer(c *http.Client) *http.Client {
	if c == nil {
		c = &http.Client{}
	}
	var tr *http.Transport
	switch rt := c.Transport.(type) {
	case nil:
		if dt, ok := http.DefaultTransport.(*http.Transport); ok {
			tr = dt.Clone()
		} else {
			tr = &http.Transport{Proxy: http.ProxyFromEnvironment}
		}
	case *http.Transport:
		tr = rt.Clone()
	default:
		return c // the caller's own RoundTripper decides
	}
	tr.DisableKeepAlives = true
	out := *c
	out.Transport = tr
	return &out
}

// retryAfter reads a Retry-After value, delay-seconds or an HTTP date
// (RFC 9110 §10.2.3); 0 when it is absent or unreadable.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(min(secs, 1<<20)) * time.Second // capped far beyond any wait
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0)
	}
	return 0
}

// closeWith starts the close handshake once; s.closed is closed when it is over.
func (s *session) closeWith(code websocket.StatusCode, reason string) {
	s.once.Do(func() {
		go func() {
			_ = s.ws.Close(code, reason)
			close(s.closed)
		}()
	})
}

// send writes one message under the write deadline. A failed write ends
// the socket: whatever was not sent goes out on the next one.
func (s *session) send(msg any) error {
	frame, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := s.ws.Write(ctx, websocket.MessageText, frame); err != nil {
		s.closeWith(websocket.StatusGoingAway, "write failed")
		return err
	}
	return nil
}

// run sends the hello and reads until the socket ends; it returns the
// close code and reason the relay sent, if any.
func (s *session) run() (protocol.CloseCode, string) {
	if err := s.send(s.t.hello()); err != nil {
		return closeOf(err)
	}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), s.idle)
		typ, data, err := s.ws.Read(ctx)
		cancel()
		if err != nil {
			return closeOf(err)
		}
		if typ == websocket.MessageText {
			s.dispatch(data)
		}
	}
}

func closeOf(err error) (protocol.CloseCode, string) {
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		return protocol.CloseCode(ce.Code), ce.Reason
	}
	return 0, ""
}

// hello is the first message of a socket (SPEC §6).
func (t *Tab) hello() protocol.Hello {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.opts.Focus {
		t.focusedAt = time.Now().UnixMilli()
	}
	return protocol.Hello{Envelope: protocol.Typed(protocol.TypeHello), Protocol: protocol.Version,
		Secret: t.secret, TabID: t.tabID, Bundle: t.bundle.Version, FocusedAt: t.focusedAt, Reconnects: t.reconnects}
}

// dispatch handles one message from the relay. Messages the headless tab
// has no use for (connections, scope) are ignored, as are broken ones.
func (s *session) dispatch(data []byte) {
	t := s.t
	env, err := protocol.DecodeType(data)
	if err != nil {
		t.log.Warn("relay message not understood", "err", err)
		return
	}
	switch env.Type {
	case protocol.TypeWelcome:
		var m protocol.Welcome
		if decode(t, data, &m) {
			s.onWelcome(m)
		}
	case protocol.TypePing:
		_ = s.send(protocol.Typed(protocol.TypePong))
	case protocol.TypeCall:
		var m protocol.Call
		if decode(t, data, &m) {
			t.onCall(m)
		}
	case protocol.TypeCancel:
		var m protocol.Cancel
		if decode(t, data, &m) {
			t.onCancel(m.ID)
		}
	case protocol.TypePermissionsQuery:
		var m protocol.PermissionsQuery
		if decode(t, data, &m) {
			_ = s.send(protocol.Permissions{Envelope: protocol.Typed(protocol.TypePermissions), ID: m.ID, Tools: t.permissions(m.Tools)})
		}
	case protocol.TypeDrain:
		var m protocol.Drain
		if decode(t, data, &m) {
			// The node goes away: leave it now, come back after the delay.
			s.drain.Store(max(m.ReconnectAfterMs, 0))
			s.closeWith(websocket.StatusNormalClosure, "draining")
		}
	case protocol.TypeError:
		var m protocol.Error
		if decode(t, data, &m) {
			t.log.Info("relay answered with an error", "code", m.Code, "message", m.Message)
		}
	}
}

func decode(t *Tab, data []byte, v any) bool {
	if err := json.Unmarshal(data, v); err != nil {
		t.log.Warn("relay message not understood", "err", err)
		return false
	}
	return true
}

// onWelcome makes s the current socket and sends what waited for one.
func (s *session) onWelcome(m protocol.Welcome) {
	t := s.t
	if s.welcomed.IsZero() {
		s.welcomed = t.now()
	}
	if m.PingIntervalMs > 0 {
		s.idle = missedPings * time.Duration(m.PingIntervalMs) * time.Millisecond
	}
	t.mu.Lock()
	if t.sess == s {
		t.mu.Unlock()
		return // a second welcome on one socket: nothing new
	}
	t.sess = s
	t.flushing = true
	t.pairing = m.Pairing
	t.reconnects++
	close(t.connected)
	queued := len(t.outbox)
	t.mu.Unlock()
	t.log.Debug("tab connected", "pairing", m.Pairing, "queued", queued)
	s.flush()
	if t.opts.Focus {
		t.Focus()
	}
}

// flush sends what waited for a socket on s, oldest first. Until the
// outbox is empty, deliver queues behind it, so that a call's progress or
// log lines never arrive after its result. It runs on s's reader, so s
// stays current until it returns or a send fails.
func (s *session) flush() {
	t := s.t
	for {
		t.mu.Lock()
		if t.sess != s {
			t.mu.Unlock()
			return
		}
		if len(t.outbox) == 0 {
			t.flushing = false
			t.mu.Unlock()
			return
		}
		msg := t.outbox[0]
		t.outbox = t.outbox[1:]
		t.mu.Unlock()
		if s.send(msg) != nil {
			// s is ending: msg goes first on the next socket.
			t.mu.Lock()
			t.outbox = append([]any{msg}, t.outbox...)
			t.mu.Unlock()
			return
		}
	}
}

// detach forgets s as the current socket.
func (t *Tab) detach(s *session) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sess == s {
		t.sess = nil
		t.flushing = false
		t.connected = make(chan struct{})
	}
}

// deliver sends msg on the current socket, or keeps it for the next one
// (SPEC §3: a result may arrive on another socket than its call's).
func (t *Tab) deliver(msg any) {
	for {
		t.mu.Lock()
		s := t.sess
		if s == nil || t.flushing {
			t.queue(msg)
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
		if s.send(msg) == nil {
			return
		}
		t.mu.Lock()
		if t.sess == s {
			// Still current, but ending: the next welcome flushes the queue.
			t.queue(msg)
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
	}
}

// queue keeps msg for the next socket; t.mu must be held.
func (t *Tab) queue(msg any) {
	if len(t.outbox) >= outboxMax {
		t.log.Warn("tab outbox full: oldest message dropped")
		t.outbox = t.outbox[1:]
	}
	t.outbox = append(t.outbox, msg)
}
