package oauth

import (
	"sync"
	"time"

	"github.com/tabrelay/tabrelay/internal/clock"
)

// Rate is a limit the store keeps for every node at once
// (Store.TakeAttempt): Burst attempts at once, then one more every Every,
// as a token bucket that gains one token per Every.
type Rate struct {
	Burst int
	Every time.Duration
}

// WrongCodesPerRequest bounds the wrong connect codes that anyone, on any
// node, with any number of tab secrets and addresses, can try during one
// connect request's life (issue 15, defect 7). A wrong code matches no
// request, so it counts against all of them: the relay takes half this
// many wrong codes at once and half as many again per ConnectCodeTTL, and
// no request's ten minutes see more. A guess of one code (40 bits) then
// succeeds with odds below WrongCodesPerRequest in 2^40 (one in a
// billion); legitimate typos are far below the budget, and an attacker
// who spends it only keeps codes from being entered for a while.
const WrongCodesPerRequest = 1000

// The wrong-code limits: each address has ten, then one per minute
// (wrongCodesPerAddress); the relay as a whole has WrongCodesPerRequest's
// budget (wrongCodesRelayWide).
var (
	wrongCodesPerAddress = Rate{Burst: 10, Every: time.Minute}
	wrongCodesRelayWide  = Rate{Burst: WrongCodesPerRequest / 2, Every: ConnectCodeTTL / (WrongCodesPerRequest / 2)}
)

// limiter is a token bucket per key (an address), kept in this node's
// memory: a per-node limit, which on N nodes lets N times as much through
// (registrations, authorization requests). Buckets full again are dropped
// so the map stays small.
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
