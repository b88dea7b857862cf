package oauth

import (
	"context"
	"strconv"
	"time"

	"github.com/tabrelay/tabrelay/internal/limit"
)

// Rate is a limit the store keeps for every node at once
// (Store.TakeAttempt): Burst attempts at once, then one more every Every,
// as a token bucket that gains one token per Every.
type Rate = limit.Rate

// WrongCodesPerRequest bounds the wrong connect codes that anyone, on any
// node, with any number of tab secrets and addresses, can try against a
// connect request during its life (issue 15, defect 7), beyond the few of
// the request's own network (wrongCodesPerNetwork). A wrong code matches
// no request, so it counts against all of them: the relay takes half this
// many wrong codes at once and half as many again per ConnectCodeTTL, and
// no request's ten minutes see more. A guess of one code (40 bits) then
// succeeds with odds below WrongCodesPerRequest in 2^40 (one in a
// billion); legitimate typos are far below the budget.
const WrongCodesPerRequest = 1000

// The wrong-code limits: each address has ten, then one per minute; each
// network (an IPv4 /24, an IPv6 /48) twenty, then one per 30 s; the relay
// as a whole has WrongCodesPerRequest's budget. A code of a request
// started from the tab's own network is looked up within the first two
// alone: guessers elsewhere who spend the relay's budget do not keep a
// person from approving her own host (issue 23).
var (
	wrongCodesPerAddress = Rate{Burst: 10, Every: time.Minute}
	wrongCodesPerNetwork = Rate{Burst: 20, Every: 30 * time.Second}
	wrongCodesRelayWide  = Rate{Burst: WrongCodesPerRequest / 2, Every: ConnectCodeTTL / (WrongCodesPerRequest / 2)}
)

// The limits of registrations and authorization requests, counted in the
// store for every node together (issue 23). An address registers 20
// clients at once, then one per 30 s, and starts 30 authorization
// requests at once, then one per 2 s. The relay as a whole registers 500
// at once, then one per 5 s (17,280 a day): with a client's metadata
// capped at maxClientMetadata and a client that never got a token gone
// after ClientUnusedTTL, registrations nobody completed hold at most
// about 80 MB of the store, however many addresses send them.
var (
	registrationsPerAddress  = Rate{Burst: 20, Every: 30 * time.Second}
	registrationsRelayWide   = Rate{Burst: 500, Every: 5 * time.Second}
	authorizationsPerAddress = Rate{Burst: 30, Every: 2 * time.Second}
)

// The limits' labels in tabrelay_oauth_limited_total.
const (
	limitedRegisterAddress  = "register_address"
	limitedRegisterRelay    = "register_relay"
	limitedAuthorizeAddress = "authorize_address"
	limitedExchangeTree     = "exchange_tree" // token exchanges of one tree (ExchangeRate)
)

// limited counts an attempt against b: 0 when it was within, else the
// wait until b has one (the refusal is counted under label), or the
// store's error (logged).
func (s *Server) limited(ctx context.Context, label string, b limit.Bucket) (time.Duration, error) {
	wait, _, err := limit.Take(ctx, s.cfg.Store, s.cfg.Clock.Now(), b)
	switch {
	case err != nil:
		s.cfg.Logger.Error("read a limit", "limit", label, "err", err)
	case wait > 0:
		s.cfg.Metrics.Limited.WithLabelValues(label).Inc()
	}
	return wait, err
}

// seconds is a wait in whole seconds, rounded up: a Retry-After.
func seconds(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
}

// codeBuckets are the wrong-code buckets of a tab at addr: its own (the
// address and its network), and the relay's.
func codeBuckets(addr string) (own []limit.Bucket, relay limit.Bucket) {
	return []limit.Bucket{
		{Key: "wrong-code:" + addr, Rate: wrongCodesPerAddress},
		{Key: "wrong-code-net:" + limit.Network(addr), Rate: wrongCodesPerNetwork},
	}, limit.Bucket{Key: "wrong-code", Rate: wrongCodesRelayWide}
}

// countWrongCode spends a wrong code of buckets. One that cannot be
// counted (the store failed) is not: the tab still hears the code was
// wrong.
func (s *Server) countWrongCode(ctx context.Context, buckets ...limit.Bucket) {
	now := s.cfg.Clock.Now()
	for _, b := range buckets {
		if _, err := s.cfg.Store.TakeAttempt(ctx, b.Key, b.Rate, now); err != nil {
			s.cfg.Logger.Error("count a wrong code", "err", err)
		}
	}
}
