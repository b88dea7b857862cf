package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/tabrelay/tabrelay/oauth"
)

// The derived connections' indexes (issue 23 §2), one bucket of keys
// kind owner \x00 child, each valued with the child's end (Unix ns, big
// endian): kind 'k' under its parent, 't' under its tree's root, 'p' under
// its pairing. A count reads one owner's keys, never the pairing's
// connections, and drops the ended ones it meets.
var bucketDerived = []byte("oauth_derived")

func init() { oauthBuckets = append(oauthBuckets, bucketDerived) }

const (
	derivedOfParent  = 'k'
	derivedOfRoot    = 't'
	derivedOfPairing = 'p'
)

func derivedPrefix(kind byte, owner string) []byte {
	return append([]byte{kind}, owner+"\x00"...)
}

// derivedKeys are c's three index keys.
func derivedKeys(c oauth.Connection) [3][]byte {
	return [3][]byte{
		append(derivedPrefix(derivedOfParent, c.ParentID), c.ID...),
		append(derivedPrefix(derivedOfRoot, c.RootID), c.ID...),
		append(derivedPrefix(derivedOfPairing, c.PairingID), c.ID...),
	}
}

// liveDerived returns the children under prefix that end after now,
// deleting the others' keys when tx is writable.
func liveDerived(tx *bbolt.Tx, prefix []byte, now time.Time) ([]string, error) {
	var live []string
	var ended [][]byte
	cur := tx.Bucket(bucketDerived).Cursor()
	for k, v := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = cur.Next() {
		if len(v) == 8 && int64(binary.BigEndian.Uint64(v)) > now.UnixNano() {
			live = append(live, string(k[len(prefix):]))
		} else {
			ended = append(ended, bytes.Clone(k))
		}
	}
	if !tx.Writable() {
		return live, nil
	}
	for _, k := range ended {
		if err := tx.Bucket(bucketDerived).Delete(k); err != nil {
			return nil, err
		}
	}
	return live, nil
}

// PutDerivedConnection stores a derived connection, its scope record
// (when given) and its index keys in one transaction, if the counts of
// lim allow it (oauth.Store). bbolt runs one writer at a time: two
// exchanges cannot both take the last place.
func (s *Store) PutDerivedConnection(_ context.Context, c oauth.Connection, sc *oauth.Scope, lim oauth.DerivedLimits, now time.Time) error {
	return s.db.Update(func(tx *bbolt.Tx) error {
		limits := []struct {
			kind  byte
			owner string
			max   int
			name  string
		}{
			{derivedOfParent, c.ParentID, lim.PerParent, oauth.LimitParent},
			{derivedOfRoot, c.RootID, lim.PerRoot, oauth.LimitRoot},
			{derivedOfPairing, c.PairingID, lim.PerPairing, oauth.LimitPairing},
		}
		for _, l := range limits {
			live, err := liveDerived(tx, derivedPrefix(l.kind, l.owner), now)
			if err != nil {
				return err
			}
			if len(live) >= l.max {
				return &oauth.DerivedFull{Limit: l.name, Live: len(live)}
			}
		}
		if sc != nil {
			if err := writeScope(tx, c.ID, *sc); err != nil {
				return err
			}
		}
		end := binary.BigEndian.AppendUint64(nil, uint64(c.End().UnixNano()))
		for _, k := range derivedKeys(c) {
			if err := tx.Bucket(bucketDerived).Put(k, end); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bucketConnsByPairing).Put(pairKey(c.PairingID, c.ID), []byte{}); err != nil {
			return err
		}
		return put(tx, bucketConnections, []byte(c.ID), c)
	})
}

// DerivedChildren lists the live children of parent, from its index.
func (s *Store) DerivedChildren(_ context.Context, parent string, now time.Time) ([]string, error) {
	var out []string
	err := s.db.View(func(tx *bbolt.Tx) (err error) {
		out, err = liveDerived(tx, derivedPrefix(derivedOfParent, parent), now)
		return err
	})
	return out, err
}

// dropDerived takes a derived connection out of the counts: it was
// revoked, or it ended.
func dropDerived(tx *bbolt.Tx, c oauth.Connection) error {
	if !c.Derived() {
		return nil
	}
	for _, k := range derivedKeys(c) {
		if err := tx.Bucket(bucketDerived).Delete(k); err != nil {
			return err
		}
	}
	return nil
}
