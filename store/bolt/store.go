// Package bolt is the embedded store of a single relay node (SPEC §7): one
// bbolt file in the data directory holding what must survive a restart —
// the generated signing key, the authorization server's records, the
// pairing records and the marks of the browsers a drain told to reconnect
// (which the node's next process reads), each until its end (Sweep deletes what ended, by the
// rules the Redis store keeps with TTLs). It keeps no secret in clear but
// the signing key it generated, in a file only its user can read.
package bolt

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/tabrelay/tabrelay/oauth"
	"github.com/tabrelay/tabrelay/pairing"
)

var (
	bucketMeta     = []byte("meta")
	bucketPairings = []byte("pairings")
	keySigningKey  = []byte("signing-key")
)

// FileName is the store's file in the data directory.
const FileName = "tabrelay.db"

// Store is the embedded store.
type Store struct {
	db       *bbolt.DB
	attempts attempts
}

var _ pairing.Store = (*Store)(nil)

// Open opens (creating when needed) the store in dir. A second process on
// the same directory waits up to a second for the file lock, then fails.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, FileName)
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if errors.Is(err, bbolt.ErrTimeout) {
		return nil, fmt.Errorf("%s is in use by another relay process", path)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, b := range append([][]byte{bucketMeta, bucketPairings, bucketDrained}, oauthBuckets...) {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("prepare %s: %w", path, err)
	}
	return &Store{db: db}, nil
}

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

// SigningKey returns the node's signing key, generating 32 random bytes
// the first time (SPEC §9: generated and kept in the data dir when no
// RELAY_SIGNING_KEY is given).
func (s *Store) SigningKey() ([]byte, error) {
	var key []byte
	err := s.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketMeta)
		if k := b.Get(keySigningKey); k != nil {
			key = append([]byte(nil), k...)
			return nil
		}
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return err
		}
		return b.Put(keySigningKey, key)
	})
	return key, err
}

// TouchPairing returns the pairing's record, creating it when new, and
// records now as its last use.
func (s *Store) TouchPairing(_ context.Context, id string, secretHash []byte, now time.Time) (pairing.Record, error) {
	return touch(s, bucketPairings, []byte(id), pairing.Touch(id, secretHash, now))
}

// touch applies renew to the record at key of bucket (found: whether it is
// there), and writes what renew made of it when renew says so. A first
// read lets a use that writes nothing cost no write transaction. An error
// from renew writes nothing and is returned.
//
// The write is a Batch: the hellos of many new browsers at once (a storm,
// a node's start) share a commit and its fsync (issue 13 item 5). The
// function may run again alone when its batch fails, and does the same
// then.
func touch[T any](s *Store, bucket, key []byte, renew func(rec *T, found bool) (bool, error)) (T, error) {
	var rec T
	write := false
	err := s.db.View(func(tx *bbolt.Tx) error {
		err := get(tx, bucket, key, &rec)
		if err != nil && !errors.Is(err, oauth.ErrNotFound) {
			return err
		}
		probe := rec
		write, err = renew(&probe, err == nil)
		return err
	})
	if err != nil || !write {
		return rec, err
	}
	err = s.db.Batch(func(tx *bbolt.Tx) error {
		var zero T
		rec = zero
		err := get(tx, bucket, key, &rec)
		if err != nil && !errors.Is(err, oauth.ErrNotFound) {
			return err
		}
		if write, err := renew(&rec, err == nil); err != nil || !write {
			return err
		}
		return put(tx, bucket, key, rec)
	})
	return rec, err
}

// RekeyPairing moves a pairing's record from one lookup id to another
// (the signing key was rotated), in one transaction.
func (s *Store) RekeyPairing(_ context.Context, from string, fromHash []byte, to string, toHash []byte, now time.Time) (pairing.Record, bool, error) {
	var p pairing.Record
	moved := false
	err := s.db.Update(func(tx *bbolt.Tx) error {
		err := get(tx, bucketPairings, []byte(from), &p)
		if errors.Is(err, oauth.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if p, moved = pairing.Rekeyed(p, fromHash, toHash, now); !moved {
			return nil
		}
		var there pairing.Record
		switch err := get(tx, bucketPairings, []byte(to), &there); {
		case err == nil:
			p = there // a record is at to already: it stays
		case !errors.Is(err, oauth.ErrNotFound):
			return err
		default:
			if err := put(tx, bucketPairings, []byte(to), p); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketPairings).Delete([]byte(from))
	})
	return p, moved, err
}

// UndoPairing deletes the record of pairing id if it is still p.
func (s *Store) UndoPairing(_ context.Context, id string, p pairing.Record) error {
	want, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bbolt.Tx) error {
		if b := tx.Bucket(bucketPairings); bytes.Equal(b.Get([]byte(id)), want) {
			return b.Delete([]byte(id))
		}
		return nil
	})
}

// HasPairing reports whether pairing id has a record.
func (s *Store) HasPairing(_ context.Context, id string) (bool, error) {
	found := false
	err := s.db.View(func(tx *bbolt.Tx) error {
		found = tx.Bucket(bucketPairings).Get([]byte(id)) != nil
		return nil
	})
	return found, err
}

// Pairings counts the pairing records.
func (s *Store) Pairings() (int, error) {
	var n int
	err := s.db.View(func(tx *bbolt.Tx) error {
		n = tx.Bucket(bucketPairings).Stats().KeyN
		return nil
	})
	return n, err
}
