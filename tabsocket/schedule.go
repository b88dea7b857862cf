package tabsocket

import (
	"sync"
	"time"

	"github.com/tabrelay/tabrelay/internal/clock"
	"github.com/tabrelay/tabrelay/protocol"
)

// The node's sockets share two schedules instead of timers of their own
// (issue 13): one pings every proven tab each PingInterval and closes a tab
// silent for two (on the Server's clock), the other closes a tab whose
// write has not returned within WriteTimeout (real time, as the library's
// own waits). Each is one timer, armed while there are sockets, that walks
// them; a socket holds only the times it is due.

// pingStep is how often the ping schedule walks the sockets: a ping is
// late by at most this.
const pingStep = time.Second

// schedule is one of the two: a timer re-armed every step while sockets
// are open.
type schedule struct {
	clock clock.Clock
	step  time.Duration
	run   func(now time.Time)

	mu    sync.Mutex // guards the fields below
	timer clock.Timer
	on    bool // sockets are open: keep ticking
}

// start arms the schedule if it is not armed.
func (sc *schedule) start() {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.on = true
	if sc.timer == nil {
		sc.timer = sc.clock.AfterFunc(sc.step, sc.tick)
	}
}

// stop disarms it after the last socket.
func (sc *schedule) stop() {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.on = false
	if sc.timer != nil {
		sc.timer.Stop()
		sc.timer = nil
	}
}

func (sc *schedule) tick() {
	sc.run(sc.clock.Now())
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.timer = nil
	if sc.on {
		sc.timer = sc.clock.AfterFunc(sc.step, sc.tick)
	}
}

// newSchedules makes the Server's two schedules.
func (s *Server) newSchedules() {
	s.pings = &schedule{clock: s.cfg.Clock, step: min(pingStep, s.cfg.PingInterval), run: s.pingDue}
	// A stuck write is closed between WriteTimeout and 1.25 times that.
	s.writes = &schedule{clock: clock.Real{}, step: max(s.cfg.WriteTimeout/4, 10*time.Millisecond), run: s.writesStuck}
}

// pingDue pings the tabs whose ping is due, and closes those that said
// nothing for two intervals.
func (s *Server) pingDue(now time.Time) {
	due := s.each(func(c *conn) bool {
		next := c.nextPing.Load()
		return next != 0 && next <= now.UnixNano()
	})
	interval := s.cfg.PingInterval
	for _, c := range due {
		if now.Sub(time.Unix(0, c.lastRead.Load())) >= 2*interval {
			c.close(protocol.ClosePingTimeout)
			continue
		}
		c.nextPing.Store(now.Add(interval).UnixNano())
		c.Send(protocol.Ping{Envelope: protocol.Typed(protocol.TypePing), At: now.UnixMilli()})
	}
}

// writesStuck closes the tabs whose write has waited WriteTimeout: a tab
// that does not take a frame in time is as slow as one whose queue is full.
func (s *Server) writesStuck(now time.Time) {
	limit := now.Add(-s.cfg.WriteTimeout).UnixNano()
	stuck := s.each(func(c *conn) bool {
		since := c.writingSince.Load()
		return since != 0 && since <= limit
	})
	for _, c := range stuck {
		c.close(protocol.CloseSlow)
	}
}

// each returns the open sockets for which pick is true.
func (s *Server) each(pick func(*conn) bool) []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*conn
	for c := range s.conns {
		if pick(c) {
			out = append(out, c)
		}
	}
	return out
}
