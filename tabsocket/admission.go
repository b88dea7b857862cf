package tabsocket

import (
	"context"
	"time"

	"github.com/tabrelay/tabrelay/internal/clock"
)

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
