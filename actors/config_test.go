package actors

import (
	"encoding/base32"
	"strings"
	"testing"
)

// TestNewIDIsItsPrefixAndEightyBitsInLowercaseBase32: ids keep the shape
// they had before NewID wrote them without an uppercase pass (logs and
// the pairing's state carry them).
func TestNewIDIsItsPrefixAndEightyBitsInLowercaseBase32(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := NewID("call-")
		rest, ok := strings.CutPrefix(id, "call-")
		if !ok || len(rest) != 16 || strings.ToLower(rest) != rest {
			t.Fatalf("NewID = %q, want call- and 16 lowercase base32 characters", id)
		}
		b, err := base32.StdEncoding.DecodeString(strings.ToUpper(rest))
		if err != nil || len(b) != 10 {
			t.Fatalf("NewID = %q: not 10 bytes of base32 (%v)", id, err)
		}
		if seen[id] {
			t.Fatalf("NewID repeated %q", id)
		}
		seen[id] = true
	}
}
