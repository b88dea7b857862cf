// Package storetest is the contract every pairing.Store must keep, as one
// set of tests: the embedded store runs it now, the Redis store later.
package storetest

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/pairing"
)

// Forgetter is what a store offers to forget a pairing.
type Forgetter interface {
}

// Store is what the suite tests.
type Store interface {
	pairing.Store
	Forgetter
}

// Run runs the suite on stores made by open (a new, empty store each call).
func Run(t *testing.T, open func(t *testing.T) Store) {
	ctx := context.Background()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	t.Run("a new pairing is created with its hash", func(t *testing.T) {
		s := open(t)
		p, err := s.TouchPairing(ctx, "p1", []byte("hash-1"), now)
		if err != nil {
			t.Fatal(err)
		}
		if p.ID != "p1" || !bytes.Equal(p.SecretHash, []byte("hash-1")) || !p.CreatedAt.Equal(now) {
			t.Fatalf("record %+v", p)
		}
	})
	t.Run("a known pairing keeps its first hash and creation time", func(t *testing.T) {
		s := open(t)
		if _, err := s.TouchPairing(ctx, "p1", []byte("hash-1"), now); err != nil {
			t.Fatal(err)
		}
		p, err := s.TouchPairing(ctx, "p1", []byte("other"), now.Add(48*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(p.SecretHash, []byte("hash-1")) || !p.CreatedAt.Equal(now) {
			t.Fatalf("record %+v", p)
		}
		if !p.LastSeen.Equal(now.Add(48 * time.Hour)) {
			t.Fatalf("last seen %v, want the second touch", p.LastSeen)
		}
	})
	t.Run("HasPairing writes nothing", func(t *testing.T) {
		s := open(t)
		if ok, err := s.HasPairing(ctx, "p1"); ok || err != nil {
			t.Fatalf("HasPairing of an unknown pairing = %v, %v", ok, err)
		}
		if ok, err := s.HasPairing(ctx, "p1"); ok || err != nil {
			t.Fatalf("HasPairing asked again = %v, %v: the first one wrote a record", ok, err)
		}
		if _, err := s.TouchPairing(ctx, "p1", []byte("hash-1"), now); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.HasPairing(ctx, "p1"); !ok || err != nil {
			t.Fatalf("HasPairing of a known pairing = %v, %v", ok, err)
		}
	})
}
