package tabsocket

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/tabrelay/tabrelay/protocol"
)

// conn is one tab socket: one reader (run), a writer (write) that runs
// only while something is queued, and a bounded queue between the actors
// and the writer that grows on demand (an idle tab holds neither a queue
// nor a writer goroutine: issue 13). Its end has one owner, end: whichever
// way the socket ends, the WebSocket and its TCP connection are closed
// exactly once and run returns only after the reader and any writer did.
type conn struct {
	s   *Server
	ws  *websocket.Conn
	raw net.Conn // the TCP connection under ws, closed when ws.Close takes too long
	// names is what the socket's log lines name once the hello did (the
	// tab, then its pairing; never the secret); read by timers too. The
	// logger is made when a line is logged (logger), not per hello.
	names atomic.Pointer[socketNames]
	addr  string // the tab's network address, host only (wrong-code limits)

	qmu     sync.Mutex     // guards the fields below
	queue   []outgoing     // waiting for the writer; at most cfg.SendQueue; nil when empty
	writing bool           // a writer goroutine runs (or returned after a failed write)
	qclosed bool           // the end began: nothing is queued and no writer starts any more
	writers sync.WaitGroup // the writer goroutine, while one runs

	// ctx ends once the WebSocket is closed. Nothing the socket reads or
	// writes derives from it: the library closes a connection whose
	// operation's context ends, which would cut the relay's own close
	// handshake short.
	ctx    context.Context
	cancel context.CancelFunc

	endOnce  sync.Once
	ending   atomic.Bool
	code     atomic.Int32 // the close code the relay chose, if it chose one
	lastRead atomic.Int64 // clock time of the last message read, Unix ns
	// nextPing is when the ping schedule pings the tab next (clock time,
	// Unix ns; 0: it does not), guarded by the ping wheel's mu;
	// writingSince is when the write under way began (real time, Unix ns;
	// 0: none runs). schedule.go reads both.
	nextPing     int64
	writingSince atomic.Int64
	credits      atomic.Int64             // questions sent (asks) that the tab has not answered yet
	pairing      string                   // set once the hello is accepted, before proven
	tab          atomic.Pointer[accepted] // set once the hello is accepted
	proven       atomic.Bool              // the hello was accepted
	released     sync.Once
	bucket       tokenBucket
}

// socketNames are the names of a socket's log lines.
type socketNames struct{ tab, pairing string }

// logger is the socket's logger: the server's, naming the tab and its
// pairing once the hello named them.
func (c *conn) logger() *slog.Logger {
	n := c.names.Load()
	switch {
	case n == nil:
		return c.s.cfg.Logger
	case n.pairing == "":
		return c.s.cfg.Logger.With("tab", n.tab)
	}
	return c.s.cfg.Logger.With("tab", n.tab, "pairing", n.pairing)
}

// outgoing is one queued message (msg, encoded by the writer, or frame,
// encoded already), or (closeWith != 0) the order to close the socket once
// everything queued before it is written.
type outgoing struct {
	msg       protocol.ToTab
	frame     []byte
	closeWith protocol.CloseCode
}

func newConn(s *Server, ws *websocket.Conn, raw net.Conn, addr string) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{s: s, ws: ws, raw: raw, addr: addr, ctx: ctx, cancel: cancel}
	c.bucket = tokenBucket{rate: float64(s.cfg.RatePerSec), burst: float64(s.cfg.RateBurst),
		tokens: float64(s.cfg.RateBurst), last: s.cfg.Clock.Now()}
	return c
}

// Send queues msg for the tab without blocking (Outbox). A full
// queue means the tab does not keep up: it is closed with CloseSlow.
func (c *conn) Send(msg protocol.ToTab) bool {
	// The writer encodes the message: the sender (a pairing, for a call
	// whose arguments may be large) only queues it.
	return c.started(c.put(outgoing{msg: msg}, asks(msg)))
}

// SendHeld queues msg as Send does, without starting the writer: when
// none runs, it returns the writer's start (Outbox). The call path hands
// it to the goroutine of the call's caller, which writes the call's frame
// itself instead of waking another (docs/BENCHMARKS.md, "A call without a
// hand-off"); like any write, it is ended as slow after WriteTimeout.
func (c *conn) SendHeld(msg protocol.ToTab) (start func(inline bool), ok bool) {
	queued, writer := c.put(outgoing{msg: msg}, asks(msg))
	if !writer {
		return nil, queued
	}
	return c.startWriter, true
}

// startWriter runs the writer a held send left to its caller. Inline,
// the caller writes one frame (the first queued: its call's, unless the
// writer was handed over in another goroutine meanwhile) and leaves what
// was queued since to a writer of its own: a caller waits for one write
// at most, never for other calls' frames.
func (c *conn) startWriter(inline bool) {
	if !inline || c.writeFrames(1) {
		go c.write()
		return
	}
	c.writers.Done()
}

// asks reports whether msg is a question the tab answers: a call (its
// result) or a permissions query (its permissions). Its answer is paid
// for by the question, never by the tab's rate limit (SPEC §6, issue 23
// §2: a flood of tools/list had the tab closed for answering the relay).
func asks(msg protocol.ToTab) bool {
	switch msg.(type) {
	case protocol.Call, protocol.PermissionsQuery:
		return true
	}
	return false
}

// sendFrame queues a message encoded already (never a call).
func (c *conn) sendFrame(frame []byte) bool { return c.started(c.put(outgoing{frame: frame}, false)) }

// put queues o (queue1); a question (asks) counts as a credit from before
// it is queued, since its answer may come as soon as its frame goes (the
// tab may answer it outside the rate limit). While the socket ends
// nothing is queued: the backlog of a gone tab costs nothing.
func (c *conn) put(o outgoing, question bool) (queued, writer bool) {
	if c.ending.Load() {
		return false, false
	}
	if question {
		c.credits.Add(1)
	}
	queued, writer = c.queue1(o)
	if !queued && question {
		c.credits.Add(-1)
	}
	return queued, writer
}

// started starts the writer whose role a queueing took (queue1), in a
// goroutine of its own; it returns whether the frame was queued.
func (c *conn) started(queued, writer bool) bool {
	if writer {
		go c.write()
	}
	return queued
}

// Close ends the socket with code after what is queued (Outbox).
func (c *conn) Close(code protocol.CloseCode) { c.closeAfterQueue(code) }

// queue1 queues o; writer is true when no writer ran, and whoever called
// must now start one (the role is taken: writing is set). A full queue
// closes the socket with CloseSlow.
func (c *conn) queue1(o outgoing) (queued, writer bool) {
	c.qmu.Lock()
	if c.qclosed {
		c.qmu.Unlock()
		return false, false
	}
	if len(c.queue) >= c.s.cfg.SendQueue {
		c.qmu.Unlock()
		c.close(protocol.CloseSlow)
		return false, false
	}
	c.queue = append(c.queue, o)
	writer = !c.writing
	if writer {
		c.writing = true
		c.writers.Add(1) // before the end can begin: end takes qmu to set qclosed
	}
	c.qmu.Unlock()
	return true, writer
}

// next takes the first queued frame; when none is left (or the end
// began) the writer stops, and the queue's array goes with it.
func (c *conn) next() (outgoing, bool) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	if c.idleLocked() {
		return outgoing{}, false
	}
	o := c.queue[0]
	c.queue[0] = outgoing{}
	c.queue = c.queue[1:]
	return o, true
}

// more reports whether frames wait for the writer, whose role the caller
// holds; when none does (or the end began), the role is let go.
func (c *conn) more() bool {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	return !c.idleLocked()
}

// idleLocked lets the writer's role go when nothing is queued (or the end
// began), and the queue's array with it; true: it did. qmu is held.
func (c *conn) idleLocked() bool {
	if c.qclosed || len(c.queue) == 0 {
		c.writing, c.queue = false, nil
		return true
	}
	return false
}

func (c *conn) closeAfterQueue(code protocol.CloseCode) {
	if !c.started(c.queue1(outgoing{closeWith: code})) {
		c.close(code)
	}
}

// close ends the socket now with a code the relay chose; the first end
// wins.
func (c *conn) close(code protocol.CloseCode) {
	how := endRelayClose
	if code == protocol.ClosePingTimeout || code == protocol.CloseSlow {
		// Nothing came from the tab for two ping intervals, or what was
		// sent did not drain: a close frame would not get through, and
		// waiting for its answer would hold the socket for nothing.
		how = endRelayAbort
	}
	c.end(how, code)
}

// endHow is how a socket ended, the label of tabrelay_tab_socket_ends_total.
type endHow string

const (
	endRelayClose    endHow = "relay_close"     // the relay chose a code; the tab answered the close frame
	endRelayNoAnswer endHow = "relay_no_answer" // the relay chose a code; the tab did not answer in time
	endRelayAbort    endHow = "relay_abort"     // the relay closed at once (ping timeout, slow tab)
	endTabClose      endHow = "tab_close"       // the tab sent a close frame
	endDropped       endHow = "dropped"         // the connection ended with no close frame (FIN, RST)
	endProtocolError endHow = "protocol_error"  // the tab broke RFC 6455 (an unmasked frame, say)
)

func endHows() []endHow {
	return []endHow{endRelayClose, endRelayNoAnswer, endRelayAbort, endTabClose, endDropped, endProtocolError}
}

// end is the one way a socket ends, however it came to (the reader, the
// writer, the hello deadline, the pings, a drain, the actors). The first
// call decides; the pairing stops sending at once; the WebSocket and its
// TCP connection are closed in the background (a close handshake may wait
// for the tab: the library bounds it at 5 s to write the frame and 5 s for
// the answer), and then ctx ends.
func (c *conn) end(how endHow, code protocol.CloseCode) {
	c.endWith(how, code, code.Reason())
}

// endWith is end with a close reason of its own (a wait to tell the tab).
func (c *conn) endWith(how endHow, code protocol.CloseCode, reason string) {
	c.endOnce.Do(func() {
		c.ending.Store(true)
		c.code.Store(int32(code))
		c.qmu.Lock()
		c.qclosed, c.queue = true, nil // the writer takes no more frames
		c.qmu.Unlock()
		c.release()
		m := c.s.cfg.Metrics
		if code != 0 {
			m.Disconnects.WithLabelValues(code.String()).Inc()
		} else {
			m.Disconnects.WithLabelValues("tab_closed").Inc()
		}
		if code.Stop() || code == protocol.CloseSlow || code == protocol.ClosePingTimeout {
			c.logger().Info("tab disconnected", "code", int(code), "reason", reason)
		}
		go func() {
			defer c.cancel()
			var cut atomic.Bool
			if c.raw != nil {
				// The library's handshake has waits without a deadline
				// (DefaultCloseTimeout): past the bound, the connection goes.
				guard := time.AfterFunc(c.s.cfg.CloseTimeout, func() { cut.Store(true); _ = c.raw.Close() })
				defer guard.Stop()
			}
			switch how {
			case endRelayClose:
				// A cut handshake returns nil: the library takes the closed
				// connection for the end of a handshake.
				if c.ws.Close(websocket.StatusCode(code), reason) != nil || cut.Load() {
					how = endRelayNoAnswer
				}
			case endProtocolError:
				// RFC 6455 §7.1.7: fail the connection; the close frame is
				// a courtesy the library bounds.
				_ = c.ws.Close(websocket.StatusProtocolError, "protocol error")
			default:
				_ = c.ws.CloseNow()
			}
			m.Ends.WithLabelValues(string(how)).Inc()
		}()
	})
}

// hello reads and checks the tab's hello within the hello deadline. It
// reports whether the tab was proven; when not, the socket's end was
// decided (wait returns once it is done).
func (c *conn) hello() bool {
	c.touch()
	deadline := c.s.cfg.Clock.AfterFunc(c.s.cfg.HelloTimeout, func() {
		if !c.proven.Load() {
			c.close(protocol.CloseNoHello)
		}
	})
	c.ws.SetReadLimit(helloReadLimit)
	ok := c.readHello(deadline)
	deadline.Stop()
	if ok {
		c.ws.SetReadLimit(protocol.MaxMessageBytes)
	}
	return ok
}

// serve reads a proven tab until the socket ends.
func (c *conn) serve() {
	defer c.release()
	c.s.cfg.Metrics.Tabs.Inc()
	defer c.s.cfg.Metrics.Tabs.Dec()
	for {
		typ, r, err := c.ws.Reader(context.Background())
		if err != nil {
			c.readFailed(err)
			return
		}
		if code, err := c.readMessage(typ, r); err != nil {
			c.readFailed(err)
			return
		} else if code != 0 {
			c.close(code)
			return
		}
	}
}

// readMessage reads the message r holds into a pooled buffer, taken once
// it arrived (a parked reader holds none), and dispatches it. The
// library's Read allocated each message anew, one for every pong.
func (c *conn) readMessage(typ websocket.MessageType, r io.Reader) (protocol.CloseCode, error) {
	buf := frames.Get().(*bytes.Buffer)
	defer putFrame(buf)
	buf.Reset()
	if _, err := buf.ReadFrom(r); err != nil {
		return 0, err
	}
	c.touch()
	if typ != websocket.MessageText {
		return protocol.CloseBadMessage, nil
	}
	return c.dispatch(buf.Bytes()), nil
}

// wait returns once the socket is closed and its writer, if one ran, is
// done; its end was decided before, as it always should be (else it ends
// now, as internal).
func (c *conn) wait() {
	c.stopPing()
	c.end(endRelayClose, protocol.CloseInternal)
	<-c.ctx.Done()
	c.writers.Wait() // no Add after qclosed, which end set before ctx ended
}

// readFailed ends the socket after a failed read. When the relay had
// chosen a code, this is its close handshake at work and changes nothing.
func (c *conn) readFailed(err error) {
	var ce websocket.CloseError
	switch {
	case errors.Is(err, websocket.ErrMessageTooBig):
		// The library wrote its 1009 close frame and closed nothing;
		// the handshake finishes it.
		c.close(protocol.CloseTooBig)
	case errors.As(err, &ce):
		c.end(endTabClose, 0) // the library answered the tab's close frame
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed), isNetError(err):
		c.end(endDropped, 0)
	default:
		c.end(endProtocolError, 0)
	}
}

func isNetError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne)
}

// write sends queued frames until none is left, each within WriteTimeout
// (never under the socket's context). A tab that does not take a frame in
// time is as slow as one whose queue is full. Only one writer runs at a
// time (whoever queued into an idle socket starts it; writing stays set
// after a failed write, so that what is queued next waits for the end
// instead of another try).
func (c *conn) write() {
	defer c.writers.Done()
	c.writeFrames(-1)
}

// writeFrames writes at most max queued frames (below zero: until none is
// left). more: the writer's role is still held, with frames left for it.
func (c *conn) writeFrames(max int) (more bool) {
	c.s.writingConns.add(c) // the write schedule watches it while it runs
	defer c.s.writingConns.remove(c)
	buf := frames.Get().(*bytes.Buffer)
	defer putFrame(buf)
	for n := 0; ; n++ {
		if n == max {
			return c.more()
		}
		o, ok := c.next()
		if !ok {
			return false
		}
		if o.closeWith != 0 {
			c.close(o.closeWith)
			return false
		}
		frame := o.frame
		if frame == nil {
			var ok bool
			if frame, ok = c.encode(buf, o.msg); !ok {
				continue
			}
		}
		// No context of its own: one per frame cost a timer and the
		// library's AfterFunc each. The write schedule ends a write that
		// waits WriteTimeout (schedule.go), as slow.
		c.writingSince.Store(time.Now().UnixNano())
		err := c.ws.Write(context.Background(), websocket.MessageText, frame)
		c.writingSince.Store(0)
		if err != nil {
			// The connection broke, the write schedule closed it (the
			// tab was slow), or the library closed it (its own close
			// frame, after a protocol error the reader will report): the
			// end says how the socket ended.
			return false
		}
	}
}

// frames are the sockets' buffers, taken while a writer runs (a frame is
// encoded into one and copied into the socket's own buffer by the write)
// or while a reader reads a message.
var frames = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledFrame bounds the buffers kept for the next writer or reader.
const maxPooledFrame = 64 << 10

// putFrame gives buf back, unless it grew for a large message.
func putFrame(buf *bytes.Buffer) {
	if buf.Cap() <= maxPooledFrame {
		frames.Put(buf)
	}
}

// encode encodes msg as a frame into buf (its bytes are valid until the
// next encode); false: it does not encode, which the relay's own messages
// always do.
func (c *conn) encode(buf *bytes.Buffer, msg protocol.ToTab) ([]byte, bool) {
	buf.Reset()
	enc := json.NewEncoder(buf)
	if err := enc.Encode(msg); err != nil {
		c.logger().Error("tab message not encodable", "type", fmt.Sprintf("%T", msg), "err", err)
		return nil, false
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), true
}

// takeCredit uses up one call sent, if any is left.
func (c *conn) takeCredit() bool {
	for {
		n := c.credits.Load()
		if n <= 0 {
			return false
		}
		if c.credits.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// release ends the tab: its calls in flight go to the browser's
// other tabs, or wait for this one to come back.
func (c *conn) release() {
	c.released.Do(func() {
		if tab := c.tab.Load(); tab != nil {
			tab.Close()
		}
	})
}

func (c *conn) touch() { c.lastRead.Store(c.s.cfg.Clock.Now().UnixNano()) }

// schedulePing puts the tab on the node's ping schedule (schedule.go): it
// is pinged every interval and closed when nothing came from it for two.
func (c *conn) schedulePing() {
	c.s.pingWheel.add(c, c.s.cfg.Clock.Now().Add(c.s.cfg.PingInterval).UnixNano())
}

func (c *conn) stopPing() { c.s.pingWheel.remove(c) }

// tokenBucket limits the messages a tab sends (SPEC §6). Only the reader
// touches it.
type tokenBucket struct {
	rate, burst, tokens float64
	last                time.Time
}

func (b *tokenBucket) take(now time.Time) bool {
	b.tokens += now.Sub(b.last).Seconds() * b.rate
	if b.tokens > b.burst {
		b.tokens = b.burst
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// accepted holds a socket's Tab where an atomic pointer can (the tab is an
// interface).
type accepted struct{ Tab }
