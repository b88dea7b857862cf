// Package limit is the relay's rate limits, kept in its store so that every
// node sharing the store counts against the same buckets (issue 15, defect
// 7; issue 23): N nodes do not let N times as much through. The buckets
// themselves are the store's (Store); this package names them and takes
// from several at once.
package limit

import (
	"context"
	"net"
	"strings"
	"time"
)

// Rate is a token bucket: Burst attempts at once, then one more every
// Every.
type Rate struct {
	Burst int
	Every time.Duration
}

// Store keeps the buckets. TakeAttempt counts one attempt under key at now
// within rate and returns 0, or, when the bucket has none left, how long
// until it has one (a refused attempt is not counted); AttemptLeft answers
// the same counting nothing. A store shared by nodes shares the counts; a
// key lives until its bucket is full again.
type Store interface {
	TakeAttempt(ctx context.Context, key string, rate Rate, now time.Time) (wait time.Duration, err error)
	AttemptLeft(ctx context.Context, key string, rate Rate, now time.Time) (wait time.Duration, err error)
}

// Bucket is one limit an attempt counts against.
type Bucket struct {
	Key  string
	Rate Rate
}

// Check reports whether every bucket has an attempt left, counting
// nothing: 0, or the first bucket that has none (its index) and the wait
// until it has one.
func Check(ctx context.Context, s Store, now time.Time, buckets ...Bucket) (wait time.Duration, spent int, err error) {
	for i, b := range buckets {
		if wait, err := s.AttemptLeft(ctx, b.Key, b.Rate, now); err != nil || wait > 0 {
			return wait, i, err
		}
	}
	return 0, -1, nil
}

// Take counts one attempt against every bucket when each has one left,
// else counts none and answers as Check does. Nodes racing between the
// check and the counts may each take the last attempt of a bucket: the
// buckets are not taken in one transaction (they may live in different
// shards of a Redis Cluster), so a race overshoots by the racers at most.
func Take(ctx context.Context, s Store, now time.Time, buckets ...Bucket) (wait time.Duration, spent int, err error) {
	if len(buckets) > 1 {
		if wait, spent, err := Check(ctx, s, now, buckets...); err != nil || wait > 0 {
			return wait, spent, err
		}
	}
	for i, b := range buckets {
		if wait, err := s.TakeAttempt(ctx, b.Key, b.Rate, now); err != nil || wait > 0 {
			return wait, i, err
		}
	}
	return 0, -1, nil
}

// Network is the network an address (as netaddr.Client gives it) belongs
// to, for the limits kept per network rather than per address: an IPv4
// address's /24, an IPv6 /64's /48. Anything else is its own network.
func Network(addr string) string {
	if ip := net.ParseIP(addr); ip != nil && ip.To4() != nil {
		return ip.Mask(net.CIDRMask(24, 32)).String() + "/24"
	}
	if ip, _, err := net.ParseCIDR(addr); err == nil && ip.To4() == nil {
		return ip.Mask(net.CIDRMask(48, 128)).String() + "/48"
	}
	if ip := net.ParseIP(strings.Trim(addr, "[]")); ip != nil {
		return ip.Mask(net.CIDRMask(48, 128)).String() + "/48"
	}
	return addr
}
