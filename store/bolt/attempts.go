package bolt

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/tabrelay/tabrelay/internal/limit"
)

// attempts are the buckets of TakeAttempt, in this process's memory: a
// single node shares them with nobody (a restart starts them full). Each
// is kept as the time it is full again (GCRA's theoretical arrival time),
// as the Redis store keeps it.
type attempts struct {
	mu   sync.Mutex // guards full
	full map[string]time.Time
}

// maxAttemptKeys bounds the buckets kept: past it, the full ones go, and
// if too few are, the nearest to full, down to three quarters of the
// bound. The most spent stay: a flood of new addresses does not refill
// the relay-wide buckets (the wrong codes', the registrations').
const maxAttemptKeys = 100_000

// TakeAttempt counts one attempt under key at now within rate (0), or
// says how long until the bucket has one.
func (s *Store) TakeAttempt(_ context.Context, key string, rate limit.Rate, now time.Time) (time.Duration, error) {
	return s.attempts.attempt(key, rate, now, true), nil
}

// AttemptLeft answers as TakeAttempt, counting nothing.
func (s *Store) AttemptLeft(_ context.Context, key string, rate limit.Rate, now time.Time) (time.Duration, error) {
	return s.attempts.attempt(key, rate, now, false), nil
}

func (a *attempts) attempt(key string, rate limit.Rate, now time.Time, take bool) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	full := a.full[key]
	if full.Before(now) {
		full = now
	}
	after := full.Add(rate.Every)
	if over := after.Sub(now) - time.Duration(rate.Burst)*rate.Every; over > 0 {
		return over
	}
	if take {
		if a.full == nil {
			a.full = map[string]time.Time{}
		}
		if _, ok := a.full[key]; !ok && len(a.full) >= maxAttemptKeys {
			a.sweep(now)
		}
		a.full[key] = after
	}
	return 0
}

func (a *attempts) sweep(now time.Time) {
	for k, full := range a.full {
		if !full.After(now) {
			delete(a.full, k)
		}
	}
	if len(a.full) < maxAttemptKeys {
		return
	}
	fulls := make([]time.Time, 0, len(a.full))
	for _, full := range a.full {
		fulls = append(fulls, full)
	}
	slices.SortFunc(fulls, time.Time.Compare)
	keep := fulls[len(fulls)-maxAttemptKeys*3/4] // the earliest kept
	for k, full := range a.full {
		if full.Before(keep) {
			delete(a.full, k)
		}
	}
}
