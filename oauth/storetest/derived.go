package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/oauth"
)

// derived is a connection derived from parent in root's tree, ending an
// hour from now.
func derived(id, parent, root, pairing string) oauth.Connection {
	c := connection(id, pairing)
	c.ParentID, c.RootID, c.ExpiresAt = parent, root, now.Add(time.Hour)
	return c
}

// full checks that err is PutDerivedConnection's refusal for limit with
// live connections counted.
func full(t *testing.T, what string, err error, limit string, live int) {
	t.Helper()
	var f *oauth.DerivedFull
	if !errors.As(err, &f) || f.Limit != limit || f.Live != live {
		t.Fatalf("%s: got %v, want the %s limit full at %d", what, err, limit, live)
	}
}

// testDerived: the three limits of derived connections (issue 23 §2) are
// counted from the store's indexes, a refusal stores nothing (its scope
// record neither), and a revoked or ended connection leaves the counts.
func testDerived(t *testing.T, s oauth.Store) {
	lim := oauth.DerivedLimits{PerParent: 2, PerRoot: 3, PerPairing: 4}
	for _, root := range []string{"r1", "r2"} {
		must(t, s.PutConnection(ctx, connection(root, "p1")))
	}
	sc := grant("counter")
	must(t, s.PutDerivedConnection(ctx, derived("k1", "r1", "r1", "p1"), &sc, lim, now))
	must(t, s.PutDerivedConnection(ctx, derived("k2", "r1", "r1", "p1"), nil, lim, now))
	full(t, "a third child of r1", s.PutDerivedConnection(ctx, derived("k3", "r1", "r1", "p1"), &sc, lim, now), oauth.LimitParent, 2)
	notFound(t, "the refused child", errOf(s.Connection(ctx, "k3")))
	notFound(t, "the refused child's scope", errOf(s.ScopeRecord(ctx, "k3")))
	if _, err := s.ScopeRecord(ctx, "k1"); err != nil {
		t.Fatalf("the scope of a stored child: %v", err)
	}
	must(t, s.PutDerivedConnection(ctx, derived("g1", "k1", "r1", "p1"), nil, lim, now))
	full(t, "a fourth in r1's tree", s.PutDerivedConnection(ctx, derived("g2", "k1", "r1", "p1"), nil, lim, now), oauth.LimitRoot, 3)
	expect(t, "children of r1", []string{"k1", "k2"})(s.DerivedChildren(ctx, "r1", now))
	expect(t, "children of k1", []string{"g1"})(s.DerivedChildren(ctx, "k1", now))

	// A revoked child leaves every count: its parent's, its tree's.
	_, err := s.UpdateConnection(ctx, "k2", func(c *oauth.Connection) error { c.Revoked = true; return nil })
	must(t, err)
	expect(t, "children of r1 after a revocation", []string{"k1"})(s.DerivedChildren(ctx, "r1", now))
	must(t, s.PutDerivedConnection(ctx, derived("g2", "k1", "r1", "p1"), nil, lim, now))

	// Another tree of the browser, up to the browser's limit.
	must(t, s.PutDerivedConnection(ctx, derived("m1", "r2", "r2", "p1"), nil, lim, now))
	full(t, "a fifth in p1", s.PutDerivedConnection(ctx, derived("m2", "r2", "r2", "p1"), nil, lim, now), oauth.LimitPairing, 4)
	must(t, s.PutDerivedConnection(ctx, derived("o1", "r9", "r9", "p2"), nil, lim, now)) // another browser counts apart

	// Ended children count no more.
	later := now.Add(2 * time.Hour)
	m2 := derived("m2", "r2", "r2", "p1")
	m2.ExpiresAt = later.Add(time.Hour)
	must(t, s.PutDerivedConnection(ctx, m2, nil, lim, later))
	if kids, err := s.DerivedChildren(ctx, "r1", later); err != nil || len(kids) != 0 {
		t.Fatalf("children of r1 once they ended: %v %v", kids, err)
	}
}

// testDerivedAtomic: racing exchanges under one parent take its places
// once each: exactly the limit is stored.
func testDerivedAtomic(t *testing.T, s oauth.Store) {
	must(t, s.PutConnection(ctx, connection("root", "p1")))
	lim := oauth.DerivedLimits{PerParent: 5, PerRoot: 100, PerPairing: 100}
	var n, stored atomic.Int32
	race(t, func() error {
		err := s.PutDerivedConnection(ctx, derived(fmt.Sprintf("kid-%d", n.Add(1)), "root", "root", "p1"), nil, lim, now)
		var f *oauth.DerivedFull
		if errors.As(err, &f) {
			return nil
		}
		if err == nil {
			stored.Add(1)
		}
		return err
	})
	kids, err := s.DerivedChildren(ctx, "root", now)
	must(t, err)
	if stored.Load() != 5 || len(kids) != 5 || !slices.IsSorted(kids) {
		t.Fatalf("racing exchanges stored %d, listed %v; want 5", stored.Load(), kids)
	}
}

func errOf[T any](_ T, err error) error { return err }
