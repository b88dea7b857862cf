package pairing_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"strings"
	"sync"
	"testing"

	"github.com/tabrelay/tabrelay/pairing"
)

// TestDerivedIDsStayTheSame: a browser's lookup id and stored hash are
// what they were when its pairing was made (HMAC-SHA256 of the labelled
// secret; the id "p" and the first 15 bytes in lowercase unpadded
// base32), whether Derive or a Deriver (shared by concurrent hellos)
// computes them: another id would lose every stored pairing.
func TestDerivedIDsStayTheSame(t *testing.T) {
	key := bytes.Repeat([]byte("k"), 32)
	mac := func(label string, secret []byte) []byte {
		h := hmac.New(sha256.New, key)
		h.Write([]byte(label + "\x00"))
		h.Write(secret)
		return h.Sum(nil)
	}
	d := pairing.NewDeriver(key)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				secret := make([]byte, pairing.SecretBytes)
				rand.Read(secret)
				wantID := "p" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(mac("tabrelay pairing id", secret)[:15]))
				wantHash := mac("tabrelay tab secret", secret)
				for name, derive := range map[string]func([]byte) (string, []byte){
					"Derive":  func(s []byte) (string, []byte) { return pairing.Derive(key, s) },
					"Deriver": d.Derive,
				} {
					if id, hash := derive(secret); id != wantID || !bytes.Equal(hash, wantHash) {
						t.Errorf("%s: %s %x, want %s %x", name, id, hash, wantID, wantHash)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkDerive: a hello's derivation, keyed anew (Derive, as for a
// previous key) or by a Deriver (the current key).
func BenchmarkDerive(b *testing.B) {
	key, secret := bytes.Repeat([]byte("k"), 32), bytes.Repeat([]byte("s"), pairing.SecretBytes)
	b.Run("Derive", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			pairing.Derive(key, secret)
		}
	})
	b.Run("Deriver", func(b *testing.B) {
		d := pairing.NewDeriver(key)
		b.ReportAllocs()
		for b.Loop() {
			d.Derive(secret)
		}
	})
}
