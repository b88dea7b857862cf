// Package storetest is the contract every pairing.Store must keep, as one
// set of tests that the embedded store and the Redis store both run. It
// only tests; it must not be imported outside test files.
package storetest

import (
	"bytes"
	"context"
	"testing"
	"time"

	oauthstoretest "github.com/tabrelay/tabrelay/oauth/storetest"
	"github.com/tabrelay/tabrelay/pairing"
)

// Store is what the suite tests. A store that is an
// oauth/storetest.Expirer or Sweeper is held to pairing.IdleTTL too.
type Store interface {
	pairing.Store
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
	t.Run("UndoPairing deletes only the record as made", func(t *testing.T) {
		s := open(t)
		made, err := s.TouchPairing(ctx, "p1", []byte("hash-1"), now)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.UndoPairing(ctx, "p1", made); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.HasPairing(ctx, "p1"); ok || err != nil {
			t.Fatalf("the pairing after its undo: %v, %v", ok, err)
		}
		made, _ = s.TouchPairing(ctx, "p2", []byte("hash-2"), now)
		if _, err := s.TouchPairing(ctx, "p2", []byte("hash-2"), now.Add(2*time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := s.UndoPairing(ctx, "p2", made); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.HasPairing(ctx, "p2"); !ok || err != nil {
			t.Fatalf("a pairing touched again since was undone: %v, %v", ok, err)
		}
		if err := s.UndoPairing(ctx, "p3", made); err != nil {
			t.Fatalf("the undo of a pairing not there: %v", err)
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
	t.Run("a re-keyed pairing keeps its id under its new lookup id", func(t *testing.T) {
		s := open(t)
		if _, err := s.TouchPairing(ctx, "old", []byte("hash-old"), now); err != nil {
			t.Fatal(err)
		}
		later := now.Add(time.Hour)
		p, moved, err := s.RekeyPairing(ctx, "old", []byte("hash-old"), "new", []byte("hash-new"), later)
		if err != nil || !moved {
			t.Fatalf("re-key: %v, moved %v", err, moved)
		}
		if p.ID != "old" || !bytes.Equal(p.SecretHash, []byte("hash-new")) || !p.CreatedAt.Equal(now) || !p.LastSeen.Equal(later) {
			t.Fatalf("re-keyed record %+v", p)
		}
		if ok, _ := s.HasPairing(ctx, "old"); ok {
			t.Fatal("the record is still under its old lookup id")
		}
		if got, err := s.TouchPairing(ctx, "new", []byte("hash-new"), later.Add(2*time.Hour)); err != nil || got.ID != "old" || !got.CreatedAt.Equal(now) {
			t.Fatalf("the next hello under the new key: %+v, %v", got, err)
		}
		// Nothing to move: no record, or one of another secret's hash.
		for _, from := range []struct{ id, hash string }{{"none", "hash-none"}, {"new", "hash-other"}} {
			if _, moved, err := s.RekeyPairing(ctx, from.id, []byte(from.hash), "elsewhere", []byte("h"), later); err != nil || moved {
				t.Fatalf("re-key from %s: moved %v, %v", from.id, moved, err)
			}
		}
		if ok, _ := s.HasPairing(ctx, "new"); !ok {
			t.Fatal("a re-key with the wrong hash moved the record")
		}
		// A racing hello moved it first: the record there stays, the old goes.
		if _, err := s.TouchPairing(ctx, "twin", []byte("hash-twin"), now); err != nil {
			t.Fatal(err)
		}
		p, moved, err = s.RekeyPairing(ctx, "twin", []byte("hash-twin"), "new", []byte("hash-new"), later)
		if err != nil || !moved || p.ID != "old" {
			t.Fatalf("re-key onto a record moved already: %+v, moved %v, %v", p, moved, err)
		}
		if ok, _ := s.HasPairing(ctx, "twin"); ok {
			t.Fatal("the record raced out is still there")
		}
		// The moved record lives IdleTTL from its re-key's hello.
		oauthstoretest.AsOf(t, s, later.Add(2*time.Hour+pairing.IdleTTL-time.Minute))
		if ok, _ := s.HasPairing(ctx, "new"); !ok {
			t.Fatal("the re-keyed record went before IdleTTL after its last hello")
		}
	})
	t.Run("a drained browser's mark lasts until its Until", func(t *testing.T) {
		s := open(t)
		marks := map[string]pairing.Drained{
			"p1": {At: now, Until: now.Add(20 * time.Second)},
			"p2": {At: now, Until: now.Add(time.Hour)},
		}
		if err := s.MarkDrained(ctx, marks); err != nil {
			t.Fatal(err)
		}
		if err := s.MarkDrained(ctx, nil); err != nil {
			t.Fatalf("no marks: %v", err)
		}
		drained := func(id string, at time.Time) (pairing.Drained, bool) {
			t.Helper()
			d, found, err := s.Drained(ctx, id, at)
			if err != nil {
				t.Fatal(err)
			}
			return d, found
		}
		if d, found := drained("p1", now.Add(10*time.Second)); !found || !d.At.Equal(now) || !d.Until.Equal(marks["p1"].Until) {
			t.Fatalf("p1's mark before its Until: %+v %v", d, found)
		}
		if d, found := drained("p1", now.Add(20*time.Second)); found {
			t.Fatalf("p1's mark at its Until: %+v", d)
		}
		if d, found := drained("none", now); found {
			t.Fatalf("a pairing never drained: %+v", d)
		}
		// A later drain's mark replaces the first.
		later := pairing.Drained{At: now.Add(time.Minute), Until: now.Add(2 * time.Minute)}
		if err := s.MarkDrained(ctx, map[string]pairing.Drained{"p1": later}); err != nil {
			t.Fatal(err)
		}
		if d, found := drained("p1", now.Add(90*time.Second)); !found || !d.At.Equal(later.At) || !d.Until.Equal(later.Until) {
			t.Fatalf("p1's second mark: %+v %v", d, found)
		}
		// The store lets a mark go after its Until (read as of before it,
		// it would be found if it were still kept).
		oauthstoretest.AsOf(t, s, now.Add(3*time.Minute))
		if d, found := drained("p1", now); found {
			t.Fatalf("p1's mark is kept past its Until: %+v", d)
		}
		if _, found := drained("p2", now); !found {
			t.Fatal("p2's mark went before its Until")
		}
	})
	t.Run("a pairing lives IdleTTL after its last hello", func(t *testing.T) {
		s := open(t)
		has := func(id string) bool {
			t.Helper()
			ok, err := s.HasPairing(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		for _, id := range []string{"idle", "used"} {
			if _, err := s.TouchPairing(ctx, id, []byte("hash-"+id), now); err != nil {
				t.Fatal(err)
			}
		}
		lastHello := now.Add(48 * time.Hour)
		if _, err := s.TouchPairing(ctx, "used", []byte("hash-used"), lastHello); err != nil {
			t.Fatal(err)
		}
		oauthstoretest.AsOf(t, s, now.Add(pairing.IdleTTL-time.Hour))
		if !has("idle") || !has("used") {
			t.Fatal("a pairing went before IdleTTL passed")
		}
		oauthstoretest.AsOf(t, s, now.Add(pairing.IdleTTL+time.Hour))
		if has("idle") {
			t.Fatal("a pairing no tab said hello to for IdleTTL is still there")
		}
		if !has("used") {
			t.Fatal("a later hello did not renew the pairing")
		}
		oauthstoretest.AsOf(t, s, lastHello.Add(pairing.IdleTTL+time.Hour))
		if has("used") {
			t.Fatal("the renewed pairing outlived IdleTTL after its last hello")
		}
		// The browser's next hello makes its record anew.
		later := lastHello.Add(pairing.IdleTTL + 2*time.Hour)
		if p, err := s.TouchPairing(ctx, "used", []byte("hash-used"), later); err != nil || !p.CreatedAt.Equal(later) {
			t.Fatalf("the browser's next hello: %+v %v", p, err)
		}
	})
}
