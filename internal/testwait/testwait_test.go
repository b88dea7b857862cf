package testwait

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestEventuallyWaitsUntilTheConditionHolds(t *testing.T) {
	var n atomic.Int32
	go func() {
		for range 5 {
			n.Add(1)
		}
	}()
	Eventually(t, func() bool { return n.Load() == 5 }, "five increments")
	polls := 0
	Eventually(t, func() bool { polls++; return polls == 3 }, "the third poll")
	if polls != 3 {
		t.Fatalf("Eventually polled %d times after the condition held at the third", polls)
	}
}

func TestWithinReportsWhetherTheConditionHeld(t *testing.T) {
	polls := 0
	if !Within(Patience, func() bool { polls++; return polls == 3 }) {
		t.Fatal("Within reported false for a condition that held at the third poll")
	}
	if Within(10*time.Millisecond, func() bool { return false }) {
		t.Fatal("Within reported true for a condition that never held")
	}
}
