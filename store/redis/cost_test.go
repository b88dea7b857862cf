package redis

import (
	"context"
	"crypto/rand"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/pairing"
)

// TestAPairingsCost measures what one stored pairing costs Redis, its key
// and record with Redis's own overhead: docs/security.md sizes the
// new-pairing limit by it (issue 23; 347 bytes when written). It fails
// when a pairing costs more than the 400 bytes the documentation counts.
func TestAPairingsCost(t *testing.T) {
	client := startRedis(t)
	s := New(client, "tabrelay:")
	ctx := context.Background()
	used := func() int64 {
		t.Helper()
		info, err := client.Info(ctx, "memory").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		t.Fatal("INFO memory has no used_memory")
		return 0
	}
	const n = 20_000
	d := pairing.NewDeriver(make([]byte, 32))
	before := used()
	now := time.Now()
	for range n {
		secret := make([]byte, pairing.SecretBytes)
		rand.Read(secret)
		id, hash := d.Derive(secret)
		if _, err := s.TouchPairing(ctx, id, hash, now); err != nil {
			t.Fatal(err)
		}
	}
	per := (used() - before) / n
	t.Logf("a pairing costs Redis %d bytes", per)
	if per > 400 {
		t.Fatalf("a pairing costs Redis %d bytes, over the 400 docs/security.md counts", per)
	}
}
