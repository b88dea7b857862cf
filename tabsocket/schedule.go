package tabsocket

import (
	"encoding/json"
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

	mu      sync.Mutex // guards the fields below
	timer   clock.Timer
	gen     uint64 // the armed timer's generation: a tick of another is stale
	on      bool   // sockets are open: keep ticking
	running bool   // a tick runs, and re-arms the timer after it if on
}

// armLocked arms the next tick, of a new generation.
func (sc *schedule) armLocked() {
	sc.gen++
	gen := sc.gen
	sc.timer = sc.clock.AfterFunc(sc.step, func() { sc.tick(gen) })
}

// start arms the schedule if it is not armed.
func (sc *schedule) start() {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.on = true
	if sc.timer == nil && !sc.running {
		sc.armLocked()
	}
}

// stop disarms it after the last socket. A timer that fired already and
// waits for the lock is stale from now on: a start right after arms a
// timer of its own, and the stale tick must not arm a second one.
func (sc *schedule) stop() {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.on = false
	sc.gen++
	if sc.timer != nil {
		sc.timer.Stop()
		sc.timer = nil
	}
}

// tick runs the schedule once, for the timer of generation gen; one runs
// at a time (a start while it runs does not arm a second timer), and a
// stale timer's tick does nothing.
func (sc *schedule) tick(gen uint64) {
	sc.mu.Lock()
	if gen != sc.gen {
		sc.mu.Unlock()
		return
	}
	sc.running, sc.timer = true, nil
	sc.mu.Unlock()
	sc.run(sc.clock.Now())
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.running = false
	if sc.on && sc.timer == nil {
		sc.armLocked()
	}
}

// newSchedules makes the Server's two schedules.
func (s *Server) newSchedules() {
	step := min(pingStep, s.cfg.PingInterval)
	s.pingWheel = newPingWheel(step, s.cfg.PingInterval)
	s.pings = &schedule{clock: s.cfg.Clock, step: step, run: s.pingDue}
	// A stuck write is closed between WriteTimeout and 1.25 times that.
	s.writes = &schedule{clock: clock.Real{}, step: max(s.cfg.WriteTimeout/4, 10*time.Millisecond), run: s.writesStuck}
	s.writingConns.set = map[*conn]struct{}{}
}

// pingDue pings the tabs whose ping is due, and closes those that said
// nothing for two intervals. The due tabs share one ping frame: they are
// pinged at the same time.
func (s *Server) pingDue(now time.Time) {
	interval := s.cfg.PingInterval
	due := s.pingWheel.take(now, interval)
	defer s.pingWheel.done(due)
	if len(due) == 0 {
		return
	}
	frame, err := json.Marshal(protocol.Ping{Envelope: protocol.Typed(protocol.TypePing), At: now.UnixMilli()})
	if err != nil {
		s.cfg.Logger.Error("ping not encodable", "err", err)
		return
	}
	for _, c := range due {
		if now.Sub(time.Unix(0, c.lastRead.Load())) >= 2*interval {
			c.close(protocol.ClosePingTimeout)
			continue
		}
		c.sendFrame(frame)
	}
}

// writesStuck closes the tabs whose write has waited WriteTimeout: a tab
// that does not take a frame in time is as slow as one whose queue is full.
// It walks only the sockets whose writer runs (an idle one has none).
func (s *Server) writesStuck(now time.Time) {
	limit := now.Add(-s.cfg.WriteTimeout).UnixNano()
	for _, c := range s.writingConns.pick(func(c *conn) bool {
		since := c.writingSince.Load()
		return since != 0 && since <= limit
	}) {
		c.close(protocol.CloseSlow)
	}
}

// connSet is a set of sockets: the ones whose writer runs.
type connSet struct {
	mu  sync.Mutex // guards set
	set map[*conn]struct{}
}

func (cs *connSet) add(c *conn) {
	cs.mu.Lock()
	cs.set[c] = struct{}{}
	cs.mu.Unlock()
}

func (cs *connSet) remove(c *conn) {
	cs.mu.Lock()
	delete(cs.set, c)
	cs.mu.Unlock()
}

// pick returns the sockets of the set for which f is true.
func (cs *connSet) pick(f func(*conn) bool) []*conn {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var out []*conn
	for c := range cs.set {
		if f(c) {
			out = append(out, c)
		}
	}
	return out
}

// pingWheel holds the proven sockets by the step in which their ping is
// due, so that a tick looks only at the sockets due instead of walking
// all of them: with 19,000 idle tabs the walk every second, a cache miss
// per socket, was a tenth of the relay's idle CPU (issue 13). A socket is
// in the slot of its nextPing; a slot may also hold sockets due a turn of
// the wheel later, which a tick leaves where they are.
type pingWheel struct {
	step int64 // ns

	mu    sync.Mutex           // guards the fields below and every conn's nextPing
	slots []map[*conn]struct{} // by (nextPing / step) % len(slots)
	taken int64                // the last step whose slot a tick took whole (0: none yet)
	due   []*conn              // the last tick's, kept for the next (done)
}

func newPingWheel(step, interval time.Duration) *pingWheel {
	n := int(interval/step) + 2 // a ping an interval ahead never lands in the slot being taken
	w := &pingWheel{step: int64(step), slots: make([]map[*conn]struct{}, n)}
	for i := range w.slots {
		w.slots[i] = map[*conn]struct{}{}
	}
	return w
}

func (w *pingWheel) slot(at int64) map[*conn]struct{} {
	return w.slots[(at/w.step)%int64(len(w.slots))]
}

// add puts c on the wheel, due at (clock time, Unix ns).
func (w *pingWheel) add(c *conn, at int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.removeLocked(c)
	c.nextPing = at
	w.slot(at)[c] = struct{}{}
}

// remove takes c off the wheel, if it is on it.
func (w *pingWheel) remove(c *conn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.removeLocked(c)
}

func (w *pingWheel) removeLocked(c *conn) {
	if c.nextPing != 0 {
		delete(w.slot(c.nextPing), c)
		c.nextPing = 0
	}
}

// take returns the sockets due at now, each put back on the wheel an
// interval later (a socket that ends meanwhile leaves it for good:
// remove comes after). It takes the slots of every step since the last
// tick: a clock moved by more than a step (a test's fake one) skips none.
func (w *pingWheel) take(now time.Time, interval time.Duration) []*conn {
	w.mu.Lock()
	defer w.mu.Unlock()
	ns, next := now.UnixNano(), now.Add(interval).UnixNano()
	due := w.due[:0]
	w.due = nil // a tick's own until done
	last := ns / w.step
	first := w.taken + 1
	if w.taken == 0 || first > last || last-first >= int64(len(w.slots)) {
		first = last - int64(len(w.slots)) + 1 // the first tick, or the clock went back: every slot
	}
	// The slot of now's step may hold sockets due later in the step: the
	// next tick takes it again.
	w.taken = last - 1
	for step := first; step <= last; step++ {
		for c := range w.slots[step%int64(len(w.slots))] {
			if c.nextPing <= ns {
				due = append(due, c)
			}
		}
	}
	for _, c := range due {
		w.removeLocked(c)
		c.nextPing = next
		w.slot(next)[c] = struct{}{}
	}
	return due
}

// done gives back the slice take returned, for the next tick; it keeps
// no socket alive.
func (w *pingWheel) done(due []*conn) {
	clear(due)
	w.mu.Lock()
	w.due = due[:0]
	w.mu.Unlock()
}
