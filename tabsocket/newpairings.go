package tabsocket

import (
	"context"
	"sync"
	"time"

	"github.com/tabrelay/tabrelay/internal/limit"
)

// The new-pairing limit's defaults (issue 23). A browser makes one pairing,
// and a hello with a fresh secret each time would otherwise store a record
// each time (issue 15, defect 6), kept IdleTTL (90 days). A record costs
// Redis about 350 bytes (docs/security.md §3 counts 400): the burst is an
// office behind one address opening the app on its first morning (3,000
// browsers, 1.2 MB), the refill what an address may add for good (100 an
// hour: 216,000 records, about 86 MB, if kept up for all of IdleTTL).
const (
	DefaultNewPairingsBurst   = 3000
	DefaultNewPairingsPerHour = 100
)

// newPairings limits, per address, the hellos that make a pairing: in the
// store, for every node together (key "new-pairing:<address>"). The node
// keeps only the store's refusals, until when each address is spent, so
// that hellos from it meanwhile ask whether their browser is known
// instead of making a record to undo.
type newPairings struct {
	rate limit.Rate // Burst 0: no limit

	mu    sync.Mutex // guards spent
	spent map[string]time.Time
}

// maxSpentAddresses bounds the addresses remembered; those past their time
// go first.
const maxSpentAddresses = 100_000

func newPairingRate(burst, perHour int) limit.Rate {
	if perHour < 0 {
		return limit.Rate{}
	}
	return limit.Rate{Burst: burst, Every: time.Hour / time.Duration(perHour)}
}

// wait is how long addr has no new pairing left, as far as this node knows
// (0: none known).
func (l *newPairings) wait(addr string, now time.Time) time.Duration {
	if l.rate.Burst == 0 {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return max(l.spent[addr].Sub(now), 0)
}

// take counts a new pairing of addr in the store: 0, or how long until
// the address has one (remembered here).
func (l *newPairings) take(ctx context.Context, s limit.Store, addr string, now time.Time) (time.Duration, error) {
	if l.rate.Burst == 0 {
		return 0, nil
	}
	wait, err := s.TakeAttempt(ctx, "new-pairing:"+addr, l.rate, now)
	if err != nil || wait == 0 {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.spent) >= maxSpentAddresses {
		for a, until := range l.spent {
			if !until.After(now) {
				delete(l.spent, a)
			}
		}
		if len(l.spent) >= maxSpentAddresses {
			clear(l.spent)
		}
	}
	l.spent[addr] = now.Add(wait)
	return wait, nil
}
