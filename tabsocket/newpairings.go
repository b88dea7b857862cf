package tabsocket

import (
	"sync"
	"time"
)

// DefaultNewPairingsPerHour is how many hellos of browsers the relay does
// not know one network address may make: at once, then refilled over an
// hour. A browser makes one pairing; a hello with a fresh secret each time
// would otherwise store a record each time (issue 15, defect 6).
const DefaultNewPairingsPerHour = 300

// newPairings limits, per address, the hellos that create a pairing. It
// lives in one node's memory, like the other per-address limits.
type newPairings struct {
	perHour float64 // 0: no limit

	mu      sync.Mutex // guards buckets
	buckets map[string]*tokenBucket
}

// maxPairingBuckets bounds the addresses remembered; full buckets are
// dropped first.
const maxPairingBuckets = 100_000

// spent reports whether addr has no new pairing left now.
func (l *newPairings) spent(addr string, now time.Time) bool {
	if l.perHour <= 0 {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[addr]
	if !ok {
		return false
	}
	probe := *b
	return !probe.take(now)
}

// take counts a new pairing of addr.
func (l *newPairings) take(addr string, now time.Time) {
	if l.perHour <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[addr]
	if !ok {
		if len(l.buckets) >= maxPairingBuckets {
			l.sweep(now)
		}
		b = &tokenBucket{rate: l.perHour / 3600, burst: l.perHour, tokens: l.perHour, last: now}
		l.buckets[addr] = b
	}
	b.take(now)
}

// sweep drops the buckets that are full again, and if none is, all of
// them: the map stays bounded whatever addresses arrive.
func (l *newPairings) sweep(now time.Time) {
	for addr, b := range l.buckets {
		if probe := *b; probe.tokens+now.Sub(probe.last).Seconds()*probe.rate >= probe.burst {
			delete(l.buckets, addr)
		}
	}
	if len(l.buckets) >= maxPairingBuckets {
		clear(l.buckets)
	}
}
