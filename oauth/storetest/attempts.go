package storetest

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/oauth"
)

// testAttempts: a bucket takes Burst attempts at once, then one more per
// Every; an attempt refused counts nothing; keys are apart.
func testAttempts(t *testing.T, s oauth.Store) {
	rate := oauth.Rate{Burst: 3, Every: time.Minute}
	take := func(key string, at time.Time) bool {
		t.Helper()
		wait, err := s.TakeAttempt(ctx, key, rate, at)
		must(t, err)
		return wait == 0
	}
	left := func(key string, at time.Time) bool {
		t.Helper()
		wait, err := s.AttemptLeft(ctx, key, rate, at)
		must(t, err)
		return wait == 0
	}
	for i := range rate.Burst {
		if !left("a", now) || !take("a", now) {
			t.Fatalf("attempt %d of a burst of %d refused", i+1, rate.Burst)
		}
	}
	if take("a", now) || left("a", now) {
		t.Fatal("an attempt past the burst was within the rate")
	}
	// The wait a refusal tells is when the bucket has one again.
	if wait, err := s.TakeAttempt(ctx, "a", rate, now.Add(10*time.Second)); err != nil || wait != rate.Every-10*time.Second {
		t.Fatalf("the wait past the burst: %v %v, want %v", wait, err, rate.Every-10*time.Second)
	}
	if !left("b", now) {
		t.Fatal("another key's bucket is spent too")
	}
	for range 5 {
		take("a", now.Add(time.Second)) // refused: counted nowhere
	}
	later := now.Add(rate.Every)
	if !take("a", later) {
		t.Fatal("no attempt one Every later: the refused ones were counted")
	}
	if take("a", later) {
		t.Fatal("two attempts one Every later")
	}
	full := later.Add(time.Duration(rate.Burst) * rate.Every)
	for i := range rate.Burst {
		if !take("a", full) {
			t.Fatalf("attempt %d of the bucket full again refused", i+1)
		}
	}
	if take("a", full) {
		t.Fatal("the bucket full again took more than its burst")
	}
}

// testAttemptsAtomic: racers on one bucket get its burst between them, as
// the nodes sharing a store must (N nodes do not give N times the tries).
func testAttemptsAtomic(t *testing.T, s oauth.Store) {
	rate := oauth.Rate{Burst: 10, Every: time.Hour}
	var won atomic.Int32
	race(t, func() error {
		wait, err := s.TakeAttempt(ctx, "shared", rate, now)
		if err == nil && wait == 0 {
			won.Add(1)
		}
		return err
	})
	if won.Load() != int32(rate.Burst) {
		t.Fatalf("%d racers took %d attempts of a burst of %d", racers, won.Load(), rate.Burst)
	}
}
