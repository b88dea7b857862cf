package tabsocket

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/tabrelay/tabrelay/actors"
	"github.com/tabrelay/tabrelay/internal/clock"
	"github.com/tabrelay/tabrelay/protocol"
)

// conn is one tab socket: one reader (run), one writer (write), and a
// bounded queue between the actors and the writer.
type conn struct {
	s    *Server
	ws   *websocket.Conn
	log  atomic.Pointer[slog.Logger] // gains the pairing once proven; read by timers too
	addr string                      // the tab's network address, host only (wrong-code limits)

	sendq   chan outgoing
	ctx     context.Context // ends when the socket is done
	cancel  context.CancelFunc
	writerD chan struct{} // closed when the writer returned

	closeOnce sync.Once
	code      atomic.Int32 // the close code, once closing
	lastRead  atomic.Int64 // clock time of the last message read, Unix ns
	ping      clock.Timer  // guarded by pingMu
	pingOff   bool         // guarded by pingMu: no ping is armed any more
	pingMu    sync.Mutex
	credits   atomic.Int64               // calls sent that the tab has not answered yet
	pairing   string                     // set once the hello is accepted; read by the reader only
	tab       atomic.Pointer[actors.Tab] // set once the hello is accepted
	proven    atomic.Bool                // the hello was accepted
	released  sync.Once
	bucket    tokenBucket
}

// outgoing is one queued frame, or (closeWith != 0) the order to close the
// socket once everything queued before it is written.
type outgoing struct {
	frame     []byte
	closeWith protocol.CloseCode
}

func newConn(s *Server, ws *websocket.Conn, addr string) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{s: s, ws: ws, addr: addr, sendq: make(chan outgoing, s.cfg.SendQueue),
		ctx: ctx, cancel: cancel, writerD: make(chan struct{})}
	c.log.Store(s.cfg.Logger)
	c.bucket = tokenBucket{rate: float64(s.cfg.RatePerSec), burst: float64(s.cfg.RateBurst),
		tokens: float64(s.cfg.RateBurst), last: s.cfg.Clock.Now()}
	return c
}

// Send queues msg for the tab without blocking (actors.Outbox). A full
// queue means the tab does not keep up: it is closed with CloseSlow.
func (c *conn) Send(msg any) bool {
	if c.ctx.Err() != nil || c.code.Load() != 0 {
		return false // closing: the backlog of a gone tab costs nothing
	}
	var frame []byte
	_, call := msg.(protocol.Call)
	if f, ok := msg.(actors.Frame); ok {
		frame = f.JSON
	} else {
		var err error
		if frame, err = json.Marshal(msg); err != nil {
			c.log.Load().Error("tab message not encodable", "type", fmt.Sprintf("%T", msg), "err", err)
			return false
		}
	}
	if !c.enqueue(outgoing{frame: frame}) {
		return false
	}
	if call {
		c.credits.Add(1) // the tab may answer it outside the rate limit
	}
	return true
}

// Close ends the socket with code after what is queued (actors.Outbox).
func (c *conn) Close(code protocol.CloseCode) { c.closeAfterQueue(code) }

func (c *conn) enqueue(o outgoing) bool {
	if c.ctx.Err() != nil || c.code.Load() != 0 {
		return false
	}
	select {
	case c.sendq <- o:
		return true
	default:
		c.close(protocol.CloseSlow)
		return false
	}
}

func (c *conn) closeAfterQueue(code protocol.CloseCode) {
	if !c.enqueue(outgoing{closeWith: code}) {
		c.close(code)
	}
}

// close ends the socket now with code; the first code wins. The close
// handshake runs in its own goroutine: it may wait on a blocked writer.
func (c *conn) close(code protocol.CloseCode) {
	c.closeOnce.Do(func() {
		c.code.Store(int32(code))
		// The pairing stops sending here at once, even while the close
		// handshake waits on a writer stuck behind a slow tab.
		c.release()
		c.s.cfg.Metrics.Disconnects.WithLabelValues(code.String()).Inc()
		if code.Stop() || code == protocol.CloseSlow || code == protocol.ClosePingTimeout {
			c.log.Load().Info("tab disconnected", "code", int(code), "reason", code.Reason())
		}
		go func() {
			_ = c.ws.Close(websocket.StatusCode(code), code.Reason())
			c.cancel()
		}()
	})
}

// run reads until the socket ends, then releases the tab.
func (c *conn) run() {
	go c.write()
	defer func() { c.cancel(); <-c.writerD }() // cancel first: the writer waits on it
	c.touch()
	hello := c.s.cfg.Clock.AfterFunc(c.s.cfg.HelloTimeout, func() {
		if !c.proven.Load() {
			c.close(protocol.CloseNoHello)
		}
	})
	defer c.stopPing() // pings start with the welcome
	c.ws.SetReadLimit(helloReadLimit)
	ok := c.readHello(hello)
	hello.Stop()
	if !ok {
		return
	}
	c.ws.SetReadLimit(protocol.MaxMessageBytes)
	defer c.release()
	c.s.cfg.Metrics.Tabs.Inc()
	defer c.s.cfg.Metrics.Tabs.Dec()
	for {
		typ, data, err := c.ws.Read(c.ctx)
		if err != nil {
			c.readFailed(err)
			return
		}
		c.touch()
		if typ != websocket.MessageText {
			c.close(protocol.CloseBadMessage)
			return
		}
		if code := c.dispatch(data); code != 0 {
			c.close(code)
			return
		}
	}
}

// readFailed records why the socket ended when nobody chose a code yet.
func (c *conn) readFailed(err error) {
	var ce websocket.CloseError
	switch {
	case errors.As(err, &ce) && ce.Code == websocket.StatusMessageTooBig:
		c.close(protocol.CloseTooBig)
	case c.code.Load() == 0:
		c.closeOnce.Do(func() { c.s.cfg.Metrics.Disconnects.WithLabelValues("tab_closed").Inc() })
	}
}

// write sends queued frames, each under a deadline. A tab that does not
// take a frame in time is as slow as one whose queue is full.
func (c *conn) write() {
	defer close(c.writerD)
	for {
		select {
		case <-c.ctx.Done():
			return
		case o := <-c.sendq:
			if o.closeWith != 0 {
				c.close(o.closeWith)
				return
			}
			ctx, cancel := context.WithTimeout(c.ctx, c.s.cfg.WriteTimeout)
			err := c.ws.Write(ctx, websocket.MessageText, o.frame)
			cancel()
			if err != nil {
				c.close(protocol.CloseSlow)
				return
			}
		}
	}
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

// release ends the tab actor: its calls in flight go to the browser's
// other tabs, or wait for this one to come back.
func (c *conn) release() {
	c.released.Do(func() {
		if tab := c.tab.Load(); tab != nil {
			tab.Close()
		}
	})
}

func (c *conn) touch() { c.lastRead.Store(c.s.cfg.Clock.Now().UnixNano()) }

// schedulePing pings the tab every interval and closes it when nothing
// came from it for two intervals.
func (c *conn) schedulePing() {
	c.pingMu.Lock()
	defer c.pingMu.Unlock()
	if c.pingOff || c.ctx.Err() != nil {
		return
	}
	interval := c.s.cfg.PingInterval
	c.ping = c.s.cfg.Clock.AfterFunc(interval, func() {
		now := c.s.cfg.Clock.Now()
		if now.Sub(time.Unix(0, c.lastRead.Load())) >= 2*interval {
			c.close(protocol.ClosePingTimeout)
			return
		}
		c.Send(protocol.Ping{Envelope: protocol.Typed(protocol.TypePing), At: now.UnixMilli()})
		c.schedulePing()
	})
}

func (c *conn) stopPing() {
	c.pingMu.Lock()
	defer c.pingMu.Unlock()
	c.pingOff = true
	if c.ping != nil {
		c.ping.Stop()
	}
}

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
