package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/tabrelay/tabrelay/oauth"
)

var _ oauth.Store = (*Store)(nil)

// The authorization server's buckets. Index buckets map a hash or a
// compound key to a record id; they are written in the same transaction as
// their record.
var (
	bucketClients         = []byte("oauth_clients")
	bucketRequests        = []byte("oauth_requests")
	bucketRequestByCode   = []byte("oauth_requests_by_code")
	bucketRequestByAuth   = []byte("oauth_requests_by_authcode")
	bucketConnections     = []byte("oauth_connections")
	bucketConnsByPairing  = []byte("oauth_connections_by_pairing")
	bucketFamilies        = []byte("oauth_families")
	bucketFamilyByRefresh = []byte("oauth_families_by_refresh")
	bucketFamsByConn      = []byte("oauth_families_by_connection")
	bucketAccess          = []byte("oauth_access")
)

var oauthBuckets = [][]byte{bucketClients, bucketRequests, bucketRequestByCode, bucketRequestByAuth, bucketConnections,
	bucketConnsByPairing, bucketFamilies, bucketFamilyByRefresh, bucketFamsByConn, bucketAccess}

func put(tx *bbolt.Tx, bucket []byte, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return tx.Bucket(bucket).Put(key, raw)
}

func get(tx *bbolt.Tx, bucket []byte, key []byte, v any) error {
	raw := tx.Bucket(bucket).Get(key)
	if raw == nil {
		return oauth.ErrNotFound
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("record %s/%x: %w", bucket, key, err)
	}
	return nil
}

// view reads key of bucket into v.
func (s *Store) view(bucket, key []byte, v any) error {
	return s.db.View(func(tx *bbolt.Tx) error { return get(tx, bucket, key, v) })
}

// byIndex reads the record whose id index maps key to.
func (s *Store) byIndex(index, key, bucket []byte, v any) error {
	return s.db.View(func(tx *bbolt.Tx) error {
		id := tx.Bucket(index).Get(key)
		if id == nil {
			return oauth.ErrNotFound
		}
		return get(tx, bucket, id, v)
	})
}

// PutClient stores a registered client (the sweep deletes it at its end).
func (s *Store) PutClient(_ context.Context, c oauth.Client) error {
	return s.db.Update(func(tx *bbolt.Tx) error { return put(tx, bucketClients, []byte(c.ID), c) })
}

// TouchClient records now as the client's last use: a token was issued
// to it.
func (s *Store) TouchClient(_ context.Context, id string, now time.Time) error {
	_, err := touch(s, bucketClients, []byte(id), oauth.ClientTouch(now))
	return err
}

// Client reads a registered client.
func (s *Store) Client(_ context.Context, id string) (c oauth.Client, err error) {
	return c, s.view(bucketClients, []byte(id), &c)
}

// PutConnectRequest stores a new connect request and indexes its code.
func (s *Store) PutConnectRequest(_ context.Context, r oauth.ConnectRequest) error {
	return s.db.Update(func(tx *bbolt.Tx) error {
		if err := tx.Bucket(bucketRequestByCode).Put(r.CodeHash, []byte(r.ID)); err != nil {
			return err
		}
		return put(tx, bucketRequests, []byte(r.ID), r)
	})
}

// ConnectRequest reads a connect request.
func (s *Store) ConnectRequest(_ context.Context, id string) (r oauth.ConnectRequest, err error) {
	return r, s.view(bucketRequests, []byte(id), &r)
}

// ConnectRequestByCode finds a request by its connect code's hash.
func (s *Store) ConnectRequestByCode(_ context.Context, codeHash []byte) (r oauth.ConnectRequest, err error) {
	return r, s.byIndex(bucketRequestByCode, codeHash, bucketRequests, &r)
}

// ConnectRequestByAuthCode finds a request by its authorization code's hash.
func (s *Store) ConnectRequestByAuthCode(_ context.Context, h []byte) (r oauth.ConnectRequest, err error) {
	return r, s.byIndex(bucketRequestByAuth, h, bucketRequests, &r)
}

// UpdateConnectRequest changes a request in one transaction, keeping the
// authorization-code index in step.
func (s *Store) UpdateConnectRequest(_ context.Context, id string, fn func(*oauth.ConnectRequest) error) (r oauth.ConnectRequest, err error) {
	err = s.db.Update(func(tx *bbolt.Tx) error {
		if err := get(tx, bucketRequests, []byte(id), &r); err != nil {
			return err
		}
		before := r.AuthCodeHash
		if err := fn(&r); err != nil {
			return err
		}
		if !bytes.Equal(before, r.AuthCodeHash) {
			idx := tx.Bucket(bucketRequestByAuth)
			if before != nil {
				if err := idx.Delete(before); err != nil {
					return err
				}
			}
			if r.AuthCodeHash != nil {
				if err := idx.Put(r.AuthCodeHash, []byte(id)); err != nil {
					return err
				}
			}
		}
		return put(tx, bucketRequests, []byte(id), r)
	})
	return r, err
}

func pairKey(a, b string) []byte { return []byte(a + "\x00" + b) }

// PutConnection stores a connection and indexes it by pairing.
func (s *Store) PutConnection(_ context.Context, c oauth.Connection) error {
	return s.db.Update(func(tx *bbolt.Tx) error {
		if err := tx.Bucket(bucketConnsByPairing).Put(pairKey(c.PairingID, c.ID), []byte{}); err != nil {
			return err
		}
		return put(tx, bucketConnections, []byte(c.ID), c)
	})
}

// Connection reads a connection.
func (s *Store) Connection(_ context.Context, id string) (c oauth.Connection, err error) {
	return c, s.view(bucketConnections, []byte(id), &c)
}

// UpdateConnection changes a connection in one transaction.
func (s *Store) UpdateConnection(_ context.Context, id string, fn func(*oauth.Connection) error) (c oauth.Connection, err error) {
	err = s.db.Update(func(tx *bbolt.Tx) error {
		if err := get(tx, bucketConnections, []byte(id), &c); err != nil {
			return err
		}
		if err := fn(&c); err != nil {
			return err
		}
		if c.Revoked {
			if err := dropDerived(tx, c); err != nil {
				return err
			}
		}
		return put(tx, bucketConnections, []byte(id), c)
	})
	return c, err
}

// ConnectionsOfPairing lists a pairing's connections, revoked ones too.
func (s *Store) ConnectionsOfPairing(_ context.Context, pairing string) ([]oauth.Connection, error) {
	var out []oauth.Connection
	err := s.db.View(func(tx *bbolt.Tx) error {
		prefix := pairKey(pairing, "")
		cur := tx.Bucket(bucketConnsByPairing).Cursor()
		for k, _ := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = cur.Next() {
			var c oauth.Connection
			if err := get(tx, bucketConnections, k[len(prefix):], &c); err != nil && !errors.Is(err, oauth.ErrNotFound) {
				return err
			} else if err == nil {
				out = append(out, c)
			}
		}
		return nil
	})
	return out, err
}

// PutFamily stores a new family and indexes its hashes and connection.
func (s *Store) PutFamily(_ context.Context, f oauth.Family) error {
	return s.db.Update(func(tx *bbolt.Tx) error {
		if err := tx.Bucket(bucketFamsByConn).Put(pairKey(f.ConnectionID, f.ID), []byte{}); err != nil {
			return err
		}
		if err := reindexFamily(tx, nil, f); err != nil {
			return err
		}
		return put(tx, bucketFamilies, []byte(f.ID), f)
	})
}

// Family reads a family.
func (s *Store) Family(_ context.Context, id string) (f oauth.Family, err error) {
	return f, s.view(bucketFamilies, []byte(id), &f)
}

// FamilyByRefresh finds the family holding a refresh hash.
func (s *Store) FamilyByRefresh(_ context.Context, h []byte) (f oauth.Family, err error) {
	return f, s.byIndex(bucketFamilyByRefresh, h, bucketFamilies, &f)
}

// UpdateFamily changes a family in one transaction: bbolt runs one writer
// at a time, so two rotations of one token are one after the other.
func (s *Store) UpdateFamily(_ context.Context, id string, fn func(*oauth.Family) error) (f oauth.Family, err error) {
	err = s.db.Update(func(tx *bbolt.Tx) error {
		if err := get(tx, bucketFamilies, []byte(id), &f); err != nil {
			return err
		}
		before := f.Hashes()
		if err := fn(&f); err != nil {
			return err
		}
		if err := reindexFamily(tx, before, f); err != nil {
			return err
		}
		return put(tx, bucketFamilies, []byte(id), f)
	})
	return f, err
}

// reindexFamily makes the refresh index hold exactly f's hashes.
func reindexFamily(tx *bbolt.Tx, before [][]byte, f oauth.Family) error {
	idx := tx.Bucket(bucketFamilyByRefresh)
	after := f.Hashes()
	for _, h := range before {
		if !containsHash(after, h) {
			if err := idx.Delete(h); err != nil {
				return err
			}
		}
	}
	for _, h := range after {
		if err := idx.Put(h, []byte(f.ID)); err != nil {
			return err
		}
	}
	return nil
}

func containsHash(list [][]byte, h []byte) bool {
	for _, x := range list {
		if bytes.Equal(x, h) {
			return true
		}
	}
	return false
}

// FamiliesOfConnection lists a connection's families.
func (s *Store) FamiliesOfConnection(_ context.Context, connection string) ([]oauth.Family, error) {
	var out []oauth.Family
	err := s.db.View(func(tx *bbolt.Tx) error {
		prefix := pairKey(connection, "")
		cur := tx.Bucket(bucketFamsByConn).Cursor()
		for k, _ := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = cur.Next() {
			var f oauth.Family
			if err := get(tx, bucketFamilies, k[len(prefix):], &f); err == nil {
				out = append(out, f)
			}
		}
		return nil
	})
	return out, err
}

// PutAccessToken stores an access token by its hash.
func (s *Store) PutAccessToken(_ context.Context, t oauth.AccessToken) error {
	return s.db.Update(func(tx *bbolt.Tx) error { return put(tx, bucketAccess, t.Hash, t) })
}

// AccessToken reads an access token by its hash.
func (s *Store) AccessToken(_ context.Context, h []byte) (t oauth.AccessToken, err error) {
	return t, s.view(bucketAccess, h, &t)
}

// DeleteAccessToken forgets an access token.
func (s *Store) DeleteAccessToken(_ context.Context, h []byte) error {
	return s.db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketAccess).Delete(h) })
}
