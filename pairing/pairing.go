// Package pairing is the record of one browser the relay knows (SPEC §1):
// its id and the hash of its tab secret, both derived from the secret
// under a signing key, the lookup id under which a record is found after
// the key is rotated, and the Store that keeps such records. The tab
// endpoint (tabsocket) derives and stores them; the stores implement
// Store. It imports nothing of ours but the limits' types, so that a store
// links neither the socket nor the actors.
package pairing

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"errors"
	"hash"
	"io"
	"sync"
	"time"

	"github.com/tabrelay/tabrelay/internal/limit"
)

// Record is the record of one browser the relay knows (SPEC §1): the tab
// secret only as an HMAC under the signing key, never the secret.
//
// A record is stored under its lookup id: the id its secret derives under
// the current signing key (Derive). Its ID is the pairing's own,
// what its connections, tokens and placement name: the lookup id under
// the key it was made with, kept when a rotation of the key moves the
// record under a new lookup id (RekeyPairing, issue 15, defect 8).
type Record struct {
	ID         string    `json:"id"`
	SecretHash []byte    `json:"secretHash"` // under the key of its lookup id
	CreatedAt  time.Time `json:"createdAt"`
	LastSeen   time.Time `json:"lastSeen"`
}

// IdleTTL is how long a pairing record stays once no tab of its
// browser said hello: renewed by each hello (at most hourly), then
// deleted (issue 15, defect 6). A browser that comes back later is
// welcomed as new, under the id its secret derives under the current key
// (the same as before unless the key was rotated meanwhile), and finds
// the connections of that id: they end by their own rules.
const IdleTTL = 90 * 24 * time.Hour

// Touch is what Store.TouchPairing does to the stored record (found:
// whether there is one), for a store to apply in its transaction: it makes
// a new record of id with secretHash, and records now as the last use; it
// reports whether the record must be written, which for a known pairing is
// at most hourly (a reconnect storm after a node left then reads, and does
// not write once per tab).
func Touch(id string, secretHash []byte, now time.Time) func(r *Record, found bool) (bool, error) {
	return func(r *Record, found bool) (bool, error) {
		if !found {
			*r = Record{ID: id, SecretHash: secretHash, CreatedAt: now.UTC()}
		} else if now.Sub(r.LastSeen) < time.Hour {
			return false, nil
		}
		r.LastSeen = now.UTC()
		return true, nil
	}
}

// Rekeyed is the record RekeyPairing stores under the new lookup id for p
// found under the old one, and whether p may move: only a record whose
// hash is fromHash (a collision of lookup ids moves nothing).
func Rekeyed(p Record, fromHash, toHash []byte, now time.Time) (Record, bool) {
	if !hmac.Equal(p.SecretHash, fromHash) {
		return Record{}, false
	}
	p.SecretHash, p.LastSeen = toHash, now.UTC()
	return p, true
}

// Store keeps pairing records. The embedded store implements it on
// one node, the Redis store across nodes.
type Store interface {
	// TouchPairing returns the record of pairing id, creating it with
	// secretHash when it is new, and records now as its last use; a record
	// unused for IdleTTL is gone.
	TouchPairing(ctx context.Context, id string, secretHash []byte, now time.Time) (Record, error)
	// HasPairing reports whether pairing id has a record, writing nothing:
	// asked before a hello of an address over its new-pairing limit, and
	// before the previous signing keys are tried.
	HasPairing(ctx context.Context, id string) (bool, error)
	// RekeyPairing moves the record stored under lookup id from, if its
	// SecretHash is fromHash, to lookup id to with toHash, keeping its ID
	// and CreatedAt and recording now as its last use; from goes. When
	// another hello moved it first, it returns the record at to. moved is
	// false when there is no such record at from.
	RekeyPairing(ctx context.Context, from string, fromHash []byte, to string, toHash []byte, now time.Time) (p Record, moved bool, err error)
	// UndoPairing deletes the record of pairing id if it is still p, as
	// TouchPairing made it: a new pairing the limit refused after its
	// record was made (a record touched or made anew since stays).
	UndoPairing(ctx context.Context, id string, p Record) error
	// The limits (limit.Store): the hellos that make new pairings are
	// counted per address in the store, on every node together.
	limit.Store
	// MarkDrained keeps, for each pairing of marks, that a node drained
	// its browser's tabs and expects them back, until the mark's Until
	// (a later mark of the same pairing replaces it). A draining node
	// writes them all at once.
	MarkDrained(ctx context.Context, marks map[string]Drained) error
	// Drained returns pairing id's mark as of now; found is false when
	// there is none or its Until has passed.
	Drained(ctx context.Context, id string, now time.Time) (d Drained, found bool, err error)
}

// Drained is a browser whose tabs a node drained (told to reconnect,
// issue 25): when, and until when they are expected back. A pairing
// actor that would answer a call that no tab is open reads it, on any
// node and in any process (the drained node's restart included), and
// waits for the tab until then instead, unless a tab of the browser
// registered since At.
type Drained struct {
	At    time.Time `json:"at"`
	Until time.Time `json:"until"`
}

// SecretBytes is the size of a tab secret (SPEC §1).
const SecretBytes = 32

var errBadSecret = errors.New("the tab secret must be 32 bytes in unpadded base64url")

// ParseSecret decodes a tab secret as a hello carries it.
func ParseSecret(s string) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != SecretBytes {
		return nil, errBadSecret
	}
	return b, nil
}

// Derive returns the lookup id and the stored hash of a tab secret
// under a signing key, both HMACs with their own labels, so that neither
// reveals the other or the secret. A pairing made under key has the lookup
// id as its own ID.
func Derive(key, secret []byte) (id string, secretHash []byte) {
	return deriveWith(hmac.New(sha256.New, key), secret)
}

// Deriver is Derive under one key for a hello after another: it keeps
// the key's HMAC states instead of keying one for each (issue 13: a new
// browser's cost). Safe for concurrent use.
type Deriver struct{ macs sync.Pool }

// NewDeriver returns Derive under key.
func NewDeriver(key []byte) *Deriver {
	key = bytes.Clone(key)
	return &Deriver{macs: sync.Pool{New: func() any { return hmac.New(sha256.New, key) }}}
}

// Derive is Derive(key, secret) for the Deriver's key.
func (d *Deriver) Derive(secret []byte) (id string, secretHash []byte) {
	h := d.macs.Get().(hash.Hash)
	defer d.macs.Put(h)
	return deriveWith(h, secret)
}

// idEncoding writes lookup ids: lowercase base32, unpadded.
var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// deriveWith derives with h, an HMAC keyed with the signing key.
func deriveWith(h hash.Hash, secret []byte) (string, []byte) {
	idMAC := labelled(h, "tabrelay pairing id", secret)
	id := make([]byte, 1+idEncoding.EncodedLen(15))
	id[0] = 'p'
	idEncoding.Encode(id[1:], idMAC[:15])
	return string(id), labelled(h, "tabrelay tab secret", secret)
}

func labelled(h hash.Hash, label string, data []byte) []byte {
	h.Reset()
	io.WriteString(h, label)
	h.Write([]byte{0})
	h.Write(data)
	return h.Sum(nil)
}
