package oauth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
)

// Hasher keeps tokens, codes and secrets as HMACs (SPEC §5). The first key
// makes new hashes; every key still finds old ones, so the signing key can
// be rotated by putting the new key first and keeping the old one until
// what it hashed has expired (fosite does the same).
type Hasher struct {
	keys [][]byte
}

// NewHasher returns a Hasher over keys, the current one first.
func NewHasher(keys ...[]byte) *Hasher { return &Hasher{keys: keys} }

// Hash returns the HMAC of secret under the current key, for a purpose
// (so that a value of one kind never matches a hash of another).
func (h *Hasher) Hash(purpose, secret string) []byte {
	return mac(h.keys[0], purpose, secret)
}

// Candidates returns the hashes of secret under every key, current first.
func (h *Hasher) Candidates(purpose, secret string) [][]byte {
	out := make([][]byte, len(h.keys))
	for i, k := range h.keys {
		out[i] = mac(k, purpose, secret)
	}
	return out
}

func mac(key []byte, purpose, secret string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("tabrelay oauth " + purpose))
	m.Write([]byte{0})
	m.Write([]byte(secret))
	return m.Sum(nil)
}

// lookup finds the record the hash of secret indexes, trying the hash
// under every key (current first), and says which hash found it: the one
// way every token, code and secret is looked up.
func lookup[T any](ctx context.Context, h *Hasher, purpose, secret string,
	get func(context.Context, []byte) (T, error)) (T, []byte, error) {
	return lookupHashes(ctx, h.Candidates(purpose, secret), get)
}

// lookupHashes is lookup of a secret's candidate hashes.
func lookupHashes[T any](ctx context.Context, hashes [][]byte, get func(context.Context, []byte) (T, error)) (T, []byte, error) {
	for _, hash := range hashes {
		v, err := get(ctx, hash)
		if !errors.Is(err, ErrNotFound) {
			return v, hash, err
		}
	}
	var zero T
	return zero, nil, ErrNotFound
}

// Purposes of hashes.
const (
	purposeAccess   = "access"
	purposeRefresh  = "refresh"
	purposeAuthCode = "code"
	purposeConnect  = "connect"
	purposeWait     = "wait"
	purposeConfirm  = "confirm"
	purposeAddress  = "address"
)

// Token prefixes: they tell a person (and secret scanners) what a leaked
// string is, and let /revoke tell access from refresh tokens without a hint.
const (
	prefixAccess   = "tra_"
	prefixRefresh  = "trr_"
	prefixAuthCode = "trc_"
)

// randomToken returns prefix + 256 random bits in unpadded base64url.
func randomToken(prefix string) string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return prefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// randomID returns prefix + 128 random bits in unpadded base64url: for ids
// that are not secrets on their own.
func randomID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return prefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// connectAlphabet has no I, O, 0 or 1: a person reads the code off one
// screen and types it into another.
const connectAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"

// newConnectCode returns a code like KQ7M-2XDP: 40 random bits.
func newConnectCode() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	var sb strings.Builder
	for i, c := range b {
		if i == 4 {
			sb.WriteByte('-')
		}
		sb.WriteByte(connectAlphabet[int(c)%len(connectAlphabet)])
	}
	return sb.String()
}

// normalizeConnectCode makes what a person typed comparable: upper case,
// without spaces or dashes, written back as XXXX-XXXX.
func normalizeConnectCode(s string) string {
	var sb strings.Builder
	for _, r := range strings.ToUpper(s) {
		if r == '-' || r == ' ' || r == '\t' {
			continue
		}
		sb.WriteRune(r)
	}
	c := sb.String()
	if len(c) != 8 {
		return c
	}
	return c[:4] + "-" + c[4:]
}
