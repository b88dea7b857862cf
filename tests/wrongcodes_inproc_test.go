//go:build !race

// In-process members: see cluster_inproc_test.go for why without the race
// detector.

package tests

import (
	"crypto/rand"
	"encoding/base64"
	"os"
	"strings"
	"testing"

	"github.com/tabrelay/tabrelay/internal/redistest"
	"github.com/tabrelay/tabrelay/pairing"
)

// TestInProcessWrongCodesCountOnEveryNode (issue 15, defect 7): the
// wrong-code limit lives in Redis, not in a node's memory. Ten wrong codes
// through one node spend the address's tries on the other too, and a tab
// with a new secret (a new pairing) from that address starts with none:
// two nodes do not give twice the tries, a fresh secret does not reset
// them. The request being guessed at still waits for the person.
func TestInProcessWrongCodesCountOnEveryNode(t *testing.T) {
	nodes := startMembers(t, redistest.Start(t), 2)
	a, b := nodes[0], nodes[1]
	h := newHost(t, a.url)
	h.register()
	f := h.authorize()
	guesser := browserWithSecret(t)
	for i := range 10 {
		if out, err := guesser.ask(a.url, "approve", wrongCode()); err == nil || !strings.Contains(out, "wrong-code") {
			t.Fatalf("guess %d through node a: %v %s", i+1, err, out)
		}
	}
	fresh := browserWithSecret(t) // a tab secret the relay never saw
	if out, err := fresh.ask(b.url, "approve", wrongCode()); err == nil || !strings.Contains(out, "limited") {
		t.Fatalf("a guess through node b with a new tab secret: %v %s, want limited", err, out)
	}
	if out, err := fresh.ask(b.url, "connect-info", f.code); err == nil || !strings.Contains(out, "limited") {
		t.Fatalf("the right code through node b: %v %s, want limited", err, out)
	}
	if st := h.status(f); st["state"] != "pending" {
		t.Fatalf("the request after the guesses: %v", st)
	}
}

// browserWithSecret is a browser whose secret file exists and no tab is
// open: each ask is a tab of it.
func browserWithSecret(t *testing.T) *browser {
	t.Helper()
	b := newBrowser(t)
	secret := make([]byte, pairing.SecretBytes)
	rand.Read(secret)
	if err := os.WriteFile(b.secretFile, []byte(base64.RawURLEncoding.EncodeToString(secret)), 0o600); err != nil {
		t.Fatal(err)
	}
	return b
}
