package bolt

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

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
