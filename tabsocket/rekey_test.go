package tabsocket_test

import (
	"crypto/rand"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tabrelay/tabrelay/pairing"
	"github.com/tabrelay/tabrelay/tabsocket"
)

// TestRotationKeepsPairings (issue 15, defect 8): after the signing key is
// rotated, with the old one among the previous keys, a browser's hello is
// welcomed as the pairing it was (its connections, tokens and placement
// name that id), and its record is re-keyed: once the old key is dropped
// too, the browser is still that pairing. A browser that said no hello
// while the old key was kept comes back as a new pairing. A known browser
// is let in even when its address made its new pairings for now.
func TestRotationKeepsPairings(t *testing.T) {
	three := func(c *tabsocket.Config) { c.NewPairingsBurst, c.NewPairingsPerHour = 3, 1 }
	before := newEnv(t, three)
	newKey := make([]byte, 32)
	rand.Read(newKey)
	during := newEnv(t, func(c *tabsocket.Config) {
		c.Store, c.SigningKey, c.PreviousKeys = before.store, newKey, [][]byte{before.key}
		three(c)
	})
	after := newEnv(t, func(c *tabsocket.Config) { c.Store, c.SigningKey = before.store, newKey })

	back, away := newSecret(), newSecret()
	_, pairingID := before.welcomed(back, "a")
	_, awayPairing := before.welcomed(away, "b")

	during.welcomed(newSecret(), "c") // spends the address's new pairings (the store's: before's two count)
	if _, got := during.welcomed(back, "a"); got != pairingID {
		t.Fatalf("during the rotation the browser is pairing %s, want %s (as before it)", got, pairingID)
	}
	if n := testutil.ToFloat64(during.metrics.Rekeyed); n != 1 {
		t.Fatalf("pairings re-keyed: %v, want 1", n)
	}
	if _, got := during.welcomed(back, "a2"); got != pairingID {
		t.Fatalf("the browser's next hello: pairing %s, want %s", got, pairingID)
	}
	if n := testutil.ToFloat64(during.metrics.Rekeyed); n != 1 {
		t.Fatalf("pairings re-keyed after a second hello: %v, want 1 (it was moved)", n)
	}

	if _, got := after.welcomed(back, "a3"); got != pairingID {
		t.Fatalf("with the old key dropped the browser is pairing %s, want %s", got, pairingID)
	}
	newID, _ := pairing.Derive(newKey, mustSecret(t, away))
	if _, got := after.welcomed(away, "b"); got == awayPairing || got != newID {
		t.Fatalf("a browser unseen during the rotation is pairing %s, want a new one (%s), not %s", got, newID, awayPairing)
	}
}
