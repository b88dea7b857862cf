package testwait

import (
	"sync/atomic"
	"testing"
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
