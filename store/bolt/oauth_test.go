package bolt

import (
	"context"
	"errors"
	"github.com/tabrelay/tabrelay/internal/syncbuf"
	"log/slog"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/tabrelay/tabrelay/oauth"
	"github.com/tabrelay/tabrelay/oauth/storetest"
	"github.com/tabrelay/tabrelay/protocol"
)

func openTemp(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestOAuthStoreContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) oauth.Store { return openTemp(t) })
}

// TestSweepLeavesNoIndexEntries looks inside the file: the contract can
// not see an index entry left behind, since its record is gone.
func TestSweepLeavesNoIndexEntries(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	past := now.Add(-oauth.FamilyAbsoluteTTL)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.PutAccessToken(ctx, oauth.AccessToken{Hash: []byte("access"), ExpiresAt: past}))
	must(s.PutConnectRequest(ctx, oauth.ConnectRequest{ID: "r1", CodeHash: []byte("code"), ExpiresAt: past}))
	_, err := s.UpdateConnectRequest(ctx, "r1", func(r *oauth.ConnectRequest) error {
		r.AuthCodeHash, r.AuthCodeExpiresAt = []byte("auth"), past
		return nil
	})
	must(err)
	must(s.PutFamily(ctx, oauth.Family{ID: "f1", ConnectionID: "conn1", LastUsed: past, AbsoluteExpiry: now,
		Current: []byte("current"), Previous: []byte("previous"), Superseded: [][]byte{[]byte("old")}}))
	if n, err := s.Sweep(ctx, now); err != nil || n != 3 {
		t.Fatalf("sweep deleted %d, %v; want 3", n, err)
	}
	err = s.db.View(func(tx *bbolt.Tx) error {
		for _, b := range oauthBuckets {
			if n := tx.Bucket(b).Stats().KeyN; n != 0 {
				t.Errorf("bucket %s keeps %d entries", b, n)
			}
		}
		return nil
	})
	must(err)
}

func TestSweepEveryDeletesAndStops(t *testing.T) {
	s := openTemp(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tok := oauth.AccessToken{Hash: []byte("expired-token"), ExpiresAt: now.Add(-time.Minute)}
	if err := s.PutAccessToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	// The second sweep's clock reading ends the loop: by then the first
	// sweep is done.
	var calls int
	clock := func() time.Time {
		if calls++; calls == 2 {
			cancel()
		}
		return now
	}
	var logs syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	done := make(chan struct{})
	go func() {
		s.SweepEvery(ctx, time.Millisecond, clock, log)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("SweepEvery did not stop when its context ended")
	}
	if _, err := s.AccessToken(context.Background(), tok.Hash); !errors.Is(err, oauth.ErrNotFound) {
		t.Fatalf("expired token after a sweep: %v", err)
	}
	if out := logs.String(); !strings.Contains(out, "deleted=1") || strings.Contains(out, "level=WARN") {
		t.Fatalf("sweep logs:\n%s", out)
	}
}

// TestSweepDropsExpiredDerivedConnections: a derived connection goes with
// its token's end, with its scope and index entries; the person's own
// connections stay.
func TestSweepDropsExpiredDerivedConnections(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	own := oauth.Connection{ID: "conn-own", PairingID: "p1", CreatedAt: now}
	child := oauth.Connection{ID: "conn-child", PairingID: "p1", ParentID: "conn-own", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	for _, c := range []oauth.Connection{own, child} {
		if err := s.PutConnection(ctx, c); err != nil {
			t.Fatal(err)
		}
		if err := s.PutScope(ctx, c.ID, oauth.Scope{Version: 1, Entries: []protocol.ScopeEntry{{Tool: "whoami", Actions: []string{"*"}}}}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.Sweep(ctx, now.Add(30*time.Minute)); err != nil || n != 0 {
		t.Fatalf("before its end: swept %d, %v", n, err)
	}
	if n, err := s.Sweep(ctx, now.Add(2*time.Hour)); err != nil || n != 1 {
		t.Fatalf("after its end: swept %d, %v", n, err)
	}
	if _, err := s.Connection(ctx, "conn-child"); !errors.Is(err, oauth.ErrNotFound) {
		t.Fatalf("the derived connection is still there: %v", err)
	}
	if holders, _ := s.ScopeHolders(ctx, "whoami", nil); len(holders) != 1 || holders[0] != "conn-own" {
		t.Fatalf("index after the sweep: %v", holders)
	}
	if cs, _ := s.ConnectionsOfPairing(ctx, "p1"); len(cs) != 1 {
		t.Fatalf("the pairing lists %d connections", len(cs))
	}
}
