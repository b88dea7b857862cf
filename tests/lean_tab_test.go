package tests

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	byteorder "encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tabrelay/tabrelay/protocol"
)

// leanTab is the idle phases' tab (BenchmarkLeanCallPath): a new browser
// (a fresh secret) with one tab, over a TCP connection of its own from a
// 127.0.0.x source address, speaking RFC 6455 itself instead of through
// headless and coder/websocket. It does on the wire what a browser's idle
// tab does (docs/tab-protocol.md §5, §13–16): the opening handshake with
// a random key and a checked Sec-WebSocket-Accept, masked frames, a hello,
// the welcome checked, each ping answered with pong (and a WebSocket ping
// with its pong), a drain's delay or the full-jitter backoff before it
// reconnects on a new connection with the same secret and tabId and
// reconnects one higher (the restart storm), a close frame answered. It
// runs no tools: a message an idle tab never gets (a call, a
// permissions-query) fails the benchmark instead of being answered.
// What it saves is the benchmark's CPU on the two cores the relay needs
// (docs/BENCHMARKS.md: µs per tab, measured).
type leanTab struct {
	addr, origin string // the relay's host:port, the Origin header
	src          net.IP
	secret       string // never logged
	tabID        string
	bundle       string
	reconnects   int
	errs         *errorList // what the benchmark fails on

	welcomed chan struct{} // closed at the first welcome
	once     sync.Once
	quit     chan struct{} // closed by stop
	stopped  atomic.Bool
	done     chan struct{} // closed when run returns

	mu        sync.Mutex // guards the fields below
	conn      net.Conn   // the current socket, nil between sockets
	closeSent bool       // a close frame went on conn
}

// The tab's waits (docs/tab-protocol.md §15; dead relay: §13).
const (
	leanMinBackoff  = 500 * time.Millisecond
	leanMaxBackoff  = 20 * time.Second
	leanStableAfter = 10 * time.Second
	leanSilence     = 3 * 25 * time.Second // three ping intervals
	leanMaxMessage  = 1 << 20              // what an idle tab accepts from the relay
)

func newLeanTab(addr, origin, bundle string, src net.IP, errs *errorList) *leanTab {
	secret, id := make([]byte, 32), make([]byte, 8)
	rand.Read(secret)
	rand.Read(id)
	return &leanTab{addr: addr, origin: origin, src: src, errs: errs, bundle: bundle,
		secret: base64.RawURLEncoding.EncodeToString(secret), tabID: hex.EncodeToString(id),
		welcomed: make(chan struct{}), quit: make(chan struct{}), done: make(chan struct{})}
}

// leanEnd is how one socket ended.
type leanEnd struct {
	welcomed   bool
	up         time.Duration // after the welcome
	drain      time.Duration // < 0: no drain came
	code       int           // the relay's close code, 0: none
	retryAfter time.Duration // a refused handshake's Retry-After
	err        error
}

// run runs the socket open opened (nil: none yet) and reconnects after
// it until stop. The first dial and handshake are done by the caller, in
// one of a few long-lived goroutines whose stacks grew once, instead of
// growing each tab's goroutine's stack (a tenth of the benchmark's CPU).
func (t *leanTab) run(open *leanSocket) {
	defer close(t.done)
	failed := 0
	for !t.stopped.Load() {
		if open == nil {
			open = t.open()
		}
		e := open.end
		if e == nil {
			e = t.serve(open)
		}
		open = nil
		if t.stopped.Load() {
			return
		}
		stop := e.code == 1009 || (e.code >= 4100 && e.code <= 4199)
		if stop || e.err != nil && errors.Is(e.err, errNotProtocol) {
			t.errs.add("lean tab: %v (close code %d)", e.err, e.code)
			return
		}
		var wait time.Duration
		switch {
		case e.drain >= 0:
			failed, wait = 0, e.drain
		default:
			if e.welcomed && e.up >= leanStableAfter {
				failed = 0
			} else if e.welcomed {
				failed = 1 // an early end since the last good try
			} else {
				failed++
			}
			ceiling := min(leanMaxBackoff, leanMinBackoff<<min(failed, 10))
			wait = max(mrand.N(ceiling), min(e.retryAfter, leanMaxBackoff))
		}
		select {
		case <-time.After(wait):
		case <-t.quit:
			return
		}
		t.reconnects++
	}
}

// stop closes the tab as a closed page does (a close frame, 1001) and
// waits for run to return.
func (t *leanTab) stop() {
	t.stopped.Store(true)
	close(t.quit)
	t.mu.Lock()
	if t.conn != nil {
		t.conn.SetDeadline(time.Now().Add(5 * time.Second))
	}
	t.mu.Unlock()
	t.closeWith(1001, "tab closed")
	select {
	case <-t.done:
	case <-time.After(6 * time.Second):
		t.mu.Lock()
		if t.conn != nil {
			t.conn.Close()
		}
		t.mu.Unlock()
		<-t.done
	}
}

// errNotProtocol marks what a relay must never do (a bad handshake
// answer, an unexpected message): the benchmark fails.
var errNotProtocol = errors.New("not the tab protocol")

// leanSocket is a socket that open welcomed (end nil), or how it ended
// before its welcome.
type leanSocket struct {
	c        net.Conn
	br       *bufio.Reader
	welcomed time.Time
	end      *leanEnd
}

// bindNoPort (IP_BIND_ADDRESS_NO_PORT) leaves the source port to connect,
// which picks it by the whole 4-tuple, instead of bind searching the ports
// of the source address (what made a dial from 127.0.0.x cost most).
func bindNoPort(_, _ string, rc syscall.RawConn) error {
	return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, 24, 1) })
}

// open dials, shakes hands, says hello and reads the welcome.
func (t *leanTab) open() *leanSocket {
	s := &leanSocket{end: &leanEnd{drain: -1}}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: t.src}, Timeout: 10 * time.Second, Control: bindNoPort}
	c, err := d.Dial("tcp", t.addr)
	if err != nil {
		s.end.err = err
		return s
	}
	t.mu.Lock()
	t.conn, t.closeSent = c, false
	t.mu.Unlock()
	fail := func(err error) *leanSocket {
		t.mu.Lock()
		t.conn = nil
		t.mu.Unlock()
		c.Close()
		s.end.err = err
		return s
	}
	if t.stopped.Load() { // stop came before the socket: it saw no conn
		return fail(net.ErrClosed)
	}
	c.SetDeadline(time.Now().Add(20 * time.Second)) // until the welcome
	br := bufio.NewReaderSize(c, 512)
	if s.end.retryAfter, err = t.handshake(c, br); err != nil {
		return fail(err)
	}
	hello, _ := json.Marshal(protocol.Hello{Envelope: protocol.Typed(protocol.TypeHello), Protocol: protocol.Version,
		Secret: t.secret, TabID: t.tabID, Bundle: t.bundle, Reconnects: t.reconnects})
	if _, err := t.write(c, 0x1, hello); err != nil {
		return fail(err)
	}
	m, code, err := t.next(c, br)
	if err != nil {
		s.end.code = code
		return fail(err)
	}
	if m.Type != protocol.TypeWelcome || m.Protocol != protocol.Version || m.Pairing == "" {
		return fail(fmt.Errorf("%w: %q before the welcome", errNotProtocol, m.Type))
	}
	t.once.Do(func() { close(t.welcomed) })
	s.c, s.br, s.welcomed, s.end = c, br, time.Now(), nil
	return s
}

// leanMessage is what the tab reads of the relay's messages.
type leanMessage struct {
	Type             string `json:"type"`
	Protocol         int    `json:"protocol"`
	Pairing          string `json:"pairing"`
	ReconnectAfterMs int64  `json:"reconnectAfterMs"`
}

// next reads the relay's next message; its close frame is answered.
func (t *leanTab) next(c net.Conn, br *bufio.Reader) (leanMessage, int, error) {
	var m leanMessage
	msg, code, err := t.readMessage(c, br)
	if err != nil {
		if code != 0 { // the relay's close frame: answer it (unless it answers ours)
			t.closeWith(code, "")
		}
		return m, code, err
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		return m, 0, fmt.Errorf("%w: %v", errNotProtocol, err)
	}
	return m, 0, nil
}

// serve answers the relay's pings on a welcomed socket until it ends.
func (t *leanTab) serve(s *leanSocket) *leanEnd {
	e := &leanEnd{drain: -1, welcomed: true}
	defer func() {
		t.mu.Lock()
		t.conn = nil
		t.mu.Unlock()
		s.c.Close()
		e.up = time.Since(s.welcomed)
	}()
	for {
		s.c.SetDeadline(time.Now().Add(leanSilence))
		m, code, err := t.next(s.c, s.br)
		if err != nil {
			e.code, e.err = code, err
			return e
		}
		switch m.Type {
		case protocol.TypePing:
			_, err = t.write(s.c, 0x1, []byte(`{"type":"pong"}`))
		case protocol.TypeDrain:
			e.drain = time.Duration(m.ReconnectAfterMs) * time.Millisecond
		default:
			err = fmt.Errorf("%w: an idle tab got %q", errNotProtocol, m.Type)
		}
		if err != nil {
			e.err = err
			return e
		}
	}
}

// wsGUID is RFC 6455 §1.3's.
const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// handshake sends the opening handshake and checks the answer (RFC 6455
// §4.1); a refusal's Retry-After comes back with its error.
func (t *leanTab) handshake(c net.Conn, br *bufio.Reader) (time.Duration, error) {
	return clientHandshake(c, br, t.addr, t.origin)
}

// clientHandshake is a browser's opening handshake of /tab on c (RFC 6455
// §4.1): a random key, and the 101's Upgrade, Connection and
// Sec-WebSocket-Accept checked. Refused, it returns the Retry-After the
// relay asked for, if any.
func clientHandshake(c net.Conn, br *bufio.Reader, addr, origin string) (time.Duration, error) {
	nonce := make([]byte, 16)
	rand.Read(nonce)
	key := base64.StdEncoding.EncodeToString(nonce)
	req := "GET /tab HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + key +
		"\r\nSec-WebSocket-Version: 13\r\nOrigin: " + origin + "\r\nUser-Agent: tabrelay-lean-bench\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		return 0, err
	}
	status, err := br.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(status))
	if len(f) < 2 || !strings.HasPrefix(f[0], "HTTP/1.") {
		return 0, fmt.Errorf("%w: status line %q", errNotProtocol, clip(string(status), 80))
	}
	h := map[string]string{}
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		if k, v, ok := bytes.Cut(line, []byte(":")); ok {
			h[strings.ToLower(string(k))] = string(bytes.TrimSpace(v))
		}
	}
	if f[1] != "101" {
		secs, _ := strconv.Atoi(h["retry-after"])
		return time.Duration(secs) * time.Second, fmt.Errorf("handshake refused: %s", f[1])
	}
	sum := sha1.Sum([]byte(key + wsGUID))
	if !strings.EqualFold(h["upgrade"], "websocket") || !strings.Contains(strings.ToLower(h["connection"]), "upgrade") ||
		h["sec-websocket-accept"] != base64.StdEncoding.EncodeToString(sum[:]) {
		return 0, fmt.Errorf("%w: a 101 without the upgrade's headers or with a wrong Sec-WebSocket-Accept", errNotProtocol)
	}
	return 0, nil
}

// write sends one masked frame (RFC 6455 §5.3), under the tab's lock
// (stop writes the close frame from another goroutine); nothing goes
// after a close frame.
func (t *leanTab) write(c net.Conn, opcode byte, payload []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closeSent {
		return 0, net.ErrClosed
	}
	return c.Write(clientFrame(opcode, payload))
}

// closeWith sends the current socket's close frame, once.
func (t *leanTab) closeWith(code int, reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.conn != nil && !t.closeSent {
		t.closeSent = true
		t.conn.Write(clientFrame(0x8, closePayload(code, reason)))
	}
}

// clientFrame is one final frame from a client: masked with a random key.
func clientFrame(opcode byte, payload []byte) []byte {
	n := len(payload)
	f := make([]byte, 0, 14+n)
	f = append(f, 0x80|opcode)
	switch {
	case n < 126:
		f = append(f, 0x80|byte(n))
	case n <= 0xffff:
		f = append(f, 0x80|126)
		f = byteorder.BigEndian.AppendUint16(f, uint16(n))
	default:
		f = append(f, 0x80|127)
		f = byteorder.BigEndian.AppendUint64(f, uint64(n))
	}
	var mask [4]byte
	byteorder.LittleEndian.PutUint32(mask[:], mrand.Uint32()) // ChaCha8: unpredictable enough (§10.3)
	f = append(f, mask[:]...)
	for i, b := range payload {
		f = append(f, b^mask[i&3])
	}
	return f
}

func closePayload(code int, reason string) []byte {
	return append(byteorder.BigEndian.AppendUint16(nil, uint16(code)), reason...)
}

// readMessage reads the next text message; a WebSocket ping is answered
// on the way. A close frame ends it with the relay's code.
func (t *leanTab) readMessage(c net.Conn, br *bufio.Reader) (msg []byte, closeCode int, err error) {
	for {
		var hdr [2]byte
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return nil, 0, err
		}
		fin, opcode, n := hdr[0]&0x80 != 0, hdr[0]&0x0f, int64(hdr[1]&0x7f)
		if hdr[1]&0x80 != 0 || hdr[0]&0x70 != 0 {
			return nil, 0, fmt.Errorf("%w: a masked frame or reserved bits from the relay", errNotProtocol)
		}
		switch n {
		case 126:
			var ext [2]byte
			if _, err := io.ReadFull(br, ext[:]); err != nil {
				return nil, 0, err
			}
			n = int64(byteorder.BigEndian.Uint16(ext[:]))
		case 127:
			var ext [8]byte
			if _, err := io.ReadFull(br, ext[:]); err != nil {
				return nil, 0, err
			}
			n = int64(byteorder.BigEndian.Uint64(ext[:]))
		}
		if int64(len(msg))+n > leanMaxMessage {
			return nil, 0, fmt.Errorf("%w: a message over %d bytes", errNotProtocol, leanMaxMessage)
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(br, payload); err != nil {
			return nil, 0, err
		}
		switch opcode {
		case 0x8: // close
			code := 1005 // no status
			if len(payload) >= 2 {
				code = int(byteorder.BigEndian.Uint16(payload))
			}
			return nil, code, fmt.Errorf("closed by the relay: %d %s", code, clip(string(payload[min(2, len(payload)):]), 80))
		case 0x9: // ping
			if _, err := t.write(c, 0xA, payload); err != nil {
				return nil, 0, err
			}
			continue
		case 0xA: // pong
			continue
		case 0x1, 0x0:
			msg = append(msg, payload...)
			if fin {
				return msg, 0, nil
			}
		default:
			return nil, 0, fmt.Errorf("%w: opcode %d", errNotProtocol, opcode)
		}
	}
}
