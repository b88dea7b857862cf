package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"

	bbolt "go.etcd.io/bbolt"

	"github.com/tabrelay/tabrelay/oauth"
)

// Scope records by connection id, and the reverse index
// tool \x00 action \x00 connection (SPEC §8: "who may call X" is answered
// from an index kept with every write, not a scan of every record).
var (
	bucketScopes     = []byte("oauth_scopes")
	bucketScopeIndex = []byte("oauth_scope_index")
)

func init() { oauthBuckets = append(oauthBuckets, bucketScopes, bucketScopeIndex) }

func indexKey(tool, action, connection string) []byte {
	return []byte(tool + "\x00" + action + "\x00" + connection)
}

// ScopeRecord returns a connection's own scope record as stored.
func (s *Store) ScopeRecord(_ context.Context, connection string) ([]byte, error) {
	var raw []byte
	err := s.db.View(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketScopes).Get([]byte(connection))
		if v == nil {
			return oauth.ErrNotFound
		}
		raw = bytes.Clone(v)
		return nil
	})
	return raw, err
}

// PutScope writes a connection's scope and its index entries in one
// transaction: the entries of the record it replaces go, the new ones come.
func (s *Store) PutScope(ctx context.Context, connection string, sc oauth.Scope) error {
	_, err := s.UpdateScope(ctx, connection, func([]byte) (oauth.Scope, error) { return sc, nil })
	return err
}

// UpdateScope reads a connection's record, lets fn make the new one, and
// writes it with its index entries, all in one transaction.
func (s *Store) UpdateScope(_ context.Context, connection string, fn func([]byte) (oauth.Scope, error)) (oauth.Scope, error) {
	var sc oauth.Scope
	err := s.db.Update(func(tx *bbolt.Tx) error {
		var err error
		if sc, err = fn(bytes.Clone(tx.Bucket(bucketScopes).Get([]byte(connection)))); err != nil {
			return err
		}
		return writeScope(tx, connection, sc)
	})
	if err != nil {
		return oauth.Scope{}, err
	}
	return sc, nil
}

// writeScope writes a connection's scope record and its index entries in
// tx, those of the record it replaces gone.
func writeScope(tx *bbolt.Tx, connection string, sc oauth.Scope) error {
	raw, err := json.Marshal(sc)
	if err != nil {
		return err
	}
	if err := dropScopeIndex(tx, connection); err != nil {
		return err
	}
	idx := tx.Bucket(bucketScopeIndex)
	for _, e := range sc.Entries {
		for _, a := range e.Actions {
			if err := idx.Put(indexKey(e.Tool, a, connection), []byte{}); err != nil {
				return err
			}
		}
	}
	return tx.Bucket(bucketScopes).Put([]byte(connection), raw)
}

// dropScopeIndex removes a connection's index entries: those of its
// current record when it decodes, else by a scan (a damaged record is
// rare). Whether the record is one the relay understands is not the
// store's question: it drops what it indexed.
func dropScopeIndex(tx *bbolt.Tx, connection string) error {
	idx := tx.Bucket(bucketScopeIndex)
	if old := tx.Bucket(bucketScopes).Get([]byte(connection)); old != nil {
		var sc oauth.Scope
		if err := json.Unmarshal(old, &sc); err == nil {
			for _, e := range sc.Entries {
				for _, a := range e.Actions {
					if err := idx.Delete(indexKey(e.Tool, a, connection)); err != nil {
						return err
					}
				}
			}
			return nil
		}
	}
	var doomed [][]byte
	suffix := []byte("\x00" + connection)
	_ = idx.ForEach(func(k, _ []byte) error {
		if bytes.HasSuffix(k, suffix) {
			doomed = append(doomed, bytes.Clone(k))
		}
		return nil
	})
	for _, k := range doomed {
		if err := idx.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// ScopeHolders lists the connections whose records have an entry for
// tool with one of actions (none: any entry for tool).
func (s *Store) ScopeHolders(_ context.Context, tool string, actions []string) ([]string, error) {
	var out []string
	err := s.db.View(func(tx *bbolt.Tx) error {
		prefix := []byte(tool + "\x00")
		cur := tx.Bucket(bucketScopeIndex).Cursor()
		for k, _ := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = cur.Next() {
			a, conn, _ := bytes.Cut(k[len(prefix):], []byte{0})
			if len(actions) == 0 || slices.Contains(actions, string(a)) {
				out = append(out, string(conn))
			}
		}
		return nil
	})
	slices.Sort(out)
	return slices.Compact(out), err
}
