package oauth

import (
	"sync"
	"time"

	"github.com/tabrelay/tabrelay/internal/clock"
)

// limiter is a token bucket per key (an address, a pairing), kept in this
// node's memory: a per-node limit, which on N nodes lets N times as much
// through. Buckets full again are dropped so the map stays small.
type limiter struct {
	clock clock.Clock
	burst float64
	rate  float64 // tokens per second

	mu      sync.Mutex // guards buckets
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newLimiter(c clock.Clock, burst int, perSecond float64) *limiter {
	return &limiter{clock: c, burst: float64(burst), rate: perSecond, buckets: map[string]*bucket{}}
}

// allow takes a token for key; false when key has none left.
func (l *limiter) allow(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.refill(key)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// blocked reports whether key has no token left, taking none.
func (l *limiter) blocked(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refill(key).tokens < 1
}

func (l *limiter) refill(key string) *bucket {
	now := l.clock.Now()
	if len(l.buckets) > 10_000 {
		l.sweep(now)
	}
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	b.tokens += now.Sub(b.last).Seconds() * l.rate
	if b.tokens > l.burst {
		b.tokens = l.burst
	}
	b.last = now
	return b
}

func (l *limiter) sweep(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*l.rate >= l.burst {
			delete(l.buckets, k)
		}
	}
}
