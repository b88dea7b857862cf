package bolt

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/pairing"
	"github.com/tabrelay/tabrelay/pairing/storetest"
)

func TestPairingStoreContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Store {
		s, err := Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestSigningKeySurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	k1, err := s.SigningKey()
	if err != nil || len(k1) != 32 {
		t.Fatalf("key %d bytes, %v", len(k1), err)
	}
	s.Close()
	info, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		t.Fatalf("store file mode %v: others may read the signing key", perm)
	}
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k2, _ := s.SigningKey()
	if !bytes.Equal(k1, k2) {
		t.Fatal("the signing key changed across a restart: every pairing id would change")
	}
}

func TestSecondProcessIsRefused(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := Open(dir); err == nil {
		t.Fatal("a second open of the same data directory succeeded")
	}
}

// TestSweepDropsPairingsUnusedForTheirTTL: a pairing no tab said hello
// to for pairing.IdleTTL goes (issue 15, defect 6), and the
// browser's next hello makes its record anew.
func TestSweepDropsPairingsUnusedForTheirTTL(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	if _, err := s.TouchPairing(ctx, "p-idle", []byte("hash"), now); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Sweep(ctx, now.Add(pairing.IdleTTL-time.Hour)); err != nil || n != 0 {
		t.Fatalf("within the TTL: swept %d, %v", n, err)
	}
	if n, err := s.Sweep(ctx, now.Add(pairing.IdleTTL+time.Hour)); err != nil || n != 1 {
		t.Fatalf("past the TTL: swept %d, %v", n, err)
	}
	if ok, _ := s.HasPairing(ctx, "p-idle"); ok {
		t.Fatal("the idle pairing is still there")
	}
	later := now.Add(pairing.IdleTTL + 2*time.Hour)
	if p, err := s.TouchPairing(ctx, "p-idle", []byte("hash"), later); err != nil || !p.CreatedAt.Equal(later) {
		t.Fatalf("the browser's next hello: %+v %v", p, err)
	}
}
