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
	deadline := time.Now().Add(Patience)
	pause := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: "+what, args...)
		}
		time.Sleep(pause)
		pause = min(2*pause, 20*time.Millisecond)
	}
}
