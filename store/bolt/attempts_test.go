package bolt

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/internal/limit"
)

// TestAFloodOfAddressesKeepsTheRelayWideBuckets: past maxAttemptKeys
// buckets, the nearest to full go; a relay-wide bucket spent by a
// guessing attack stays spent, however many new addresses arrive.
func TestAFloodOfAddressesKeepsTheRelayWideBuckets(t *testing.T) {
	ctx := context.Background()
	s := &Store{}
	relay := limit.Rate{Burst: 500, Every: 1200 * time.Millisecond}
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	for range relay.Burst {
		s.TakeAttempt(ctx, "wrong-code", relay, now)
	}
	perAddress := limit.Rate{Burst: 30, Every: 2 * time.Second}
	for i := range maxAttemptKeys + 10 {
		s.TakeAttempt(ctx, "authorize:"+strconv.Itoa(i), perAddress, now.Add(time.Duration(i)*time.Microsecond))
	}
	if n := len(s.attempts.full); n > maxAttemptKeys {
		t.Fatalf("%d buckets kept, over %d", n, maxAttemptKeys)
	}
	if wait, _ := s.AttemptLeft(ctx, "wrong-code", relay, now.Add(time.Second)); wait == 0 {
		t.Fatal("the relay-wide bucket refilled when new addresses flooded the map")
	}
}
