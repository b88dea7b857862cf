// Package testwait is the one way the relay's tests wait for what another
// goroutine, process or browser does: Eventually polls a condition until
// it holds, and fails the test when it has not within Patience. It is for
// tests only; a wait is never an assertion on speed (benchmarks measure
// that), so Patience is long.
package testwait

import (
	"testing"
	"time"
)

// Patience is how long Eventually waits before it fails the test: long
// enough for a loaded machine with the race detector on.
const Patience = 30 * time.Second

// Eventually waits until cond holds, polling it at first every
// millisecond and then less often (cond may be an HTTP request or a read
// of Redis), and fails t with what (formatted with args) after Patience.
func Eventually(t testing.TB, cond func() bool, what string, args ...any) {
	t.Helper()
	if !Within(Patience, cond) {
		t.Fatalf("timed out waiting: "+what, args...)
	}
}

// Within polls cond as Eventually does for at most d, and reports whether
// it held. It stands in for a timeout of the code under test when that
// runs on a fake clock (what has not come within d is taken as not
// coming, and the test moves the clock on); it never asserts anything.
func Within(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	pause := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
		pause = min(2*pause, 20*time.Millisecond)
	}
	return true
}
