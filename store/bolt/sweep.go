package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/tabrelay/tabrelay/oauth"
	"github.com/tabrelay/tabrelay/pairing"
)

// sweepBatch bounds the deletions of one write transaction, so a sweep of
// a large file does not hold the writer for long.
const sweepBatch = 500

// Sweep deletes, as of now, the records no one can use any more, with
// their index entries, and returns how many records it deleted. The rules
// are those of oauth/storetest's lifetimes, which Redis keeps by TTLs:
//
//   - an access token once now is past its ExpiresAt;
//   - a connect request once now is past its ExpiresAt by more than
//     oauth.AuthCodeTTL and past its AuthCodeExpiresAt;
//   - a refresh family, revoked or not, once now is past its
//     AbsoluteExpiry or its LastUsed by more than oauth.FamilyIdleTTL;
//   - a client once now is past its End (renewed by its tokens);
//   - a connection, revoked or not, once now is past its End, with its
//     scope record and index entries;
//   - a scope record whose connection is gone (one was never stored);
//   - a pairing once now is past its LastSeen by more than
//     pairing.IdleTTL;
//   - a drained browser's mark once now is past its Until.
//
// Each record is judged again in the transaction that deletes it, so one
// updated since the scan (a family just refreshed) is kept. A record that
// does not decode is left alone and reported in the error.
func (s *Store) Sweep(ctx context.Context, now time.Time) (int, error) {
	kinds := []struct {
		bucket []byte
		dead   func(tx *bbolt.Tx, key, raw []byte) (bool, error)
		drop   func(tx *bbolt.Tx, key, raw []byte) error
	}{
		{bucketAccess, decoded(func(t oauth.AccessToken) bool { return now.After(t.ExpiresAt) }), dropAccessToken},
		{bucketRequests, decoded(deadRequest(now)), dropRequest},
		{bucketFamilies, decoded(deadFamily(now)), dropFamily},
		{bucketClients, decoded(func(c oauth.Client) bool { return now.After(c.End()) }), dropClient},
		{bucketConnections, decoded(func(c oauth.Connection) bool { return now.After(c.End()) }), dropConnection},
		{bucketScopes, orphanScope(now), dropScope},
		{bucketPairings, decoded(func(p pairing.Record) bool { return now.Sub(p.LastSeen) > pairing.IdleTTL }), dropPairing},
		{bucketDrained, decoded(func(d pairing.Drained) bool { return !now.Before(d.Until) }), dropDrained},
	}
	total := 0
	var firstErr error
	for _, k := range kinds {
		n, err := s.sweepBucket(ctx, k.bucket, k.dead, k.drop)
		total += n
		if ctx.Err() != nil {
			return total, ctx.Err()
		}
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return total, firstErr
}

// decoded judges a record of type T by dead.
func decoded[T any](dead func(T) bool) func(*bbolt.Tx, []byte, []byte) (bool, error) {
	return func(_ *bbolt.Tx, _, raw []byte) (bool, error) {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return false, err
		}
		return dead(v), nil
	}
}

// sweepBucket scans bucket for dead records, then deletes them in batches.
// Its error is the first record that did not decode, or a failed write.
func (s *Store) sweepBucket(ctx context.Context, bucket []byte, dead func(tx *bbolt.Tx, key, raw []byte) (bool, error),
	drop func(tx *bbolt.Tx, key, raw []byte) error) (int, error) {
	var keys [][]byte
	var decodeErr error
	err := s.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucket).ForEach(func(k, v []byte) error {
			ok, err := dead(tx, k, v)
			if err != nil && decodeErr == nil {
				decodeErr = fmt.Errorf("record %s/%x: %w", bucket, k, err)
			}
			if ok {
				keys = append(keys, bytes.Clone(k))
			}
			return nil
		})
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for len(keys) > 0 {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		batch := keys[:min(sweepBatch, len(keys))]
		keys = keys[len(batch):]
		err := s.db.Update(func(tx *bbolt.Tx) error {
			for _, k := range batch {
				raw := tx.Bucket(bucket).Get(k)
				if raw == nil {
					continue
				}
				if ok, _ := dead(tx, k, raw); !ok {
					continue
				}
				if err := drop(tx, k, raw); err != nil {
					return err
				}
				n++
			}
			return nil
		})
		if err != nil {
			return n, err
		}
	}
	return n, decodeErr
}

func dropAccessToken(tx *bbolt.Tx, key, _ []byte) error { return tx.Bucket(bucketAccess).Delete(key) }

func dropPairing(tx *bbolt.Tx, key, _ []byte) error { return tx.Bucket(bucketPairings).Delete(key) }

// deadRequest: the connect code can no longer be approved, an approval not
// fetched by the waiting page (which polls every few seconds) within
// AuthCodeTTL after it is abandoned, and no code of it can be exchanged.
func deadRequest(now time.Time) func(oauth.ConnectRequest) bool {
	return func(r oauth.ConnectRequest) bool {
		return now.After(r.ExpiresAt.Add(oauth.AuthCodeTTL)) && now.After(r.AuthCodeExpiresAt)
	}
}

func dropRequest(tx *bbolt.Tx, key, raw []byte) error {
	var r oauth.ConnectRequest
	if err := json.Unmarshal(raw, &r); err != nil {
		return err
	}
	if err := dropIndex(tx, bucketRequestByCode, r.CodeHash, key); err != nil {
		return err
	}
	if err := dropIndex(tx, bucketRequestByAuth, r.AuthCodeHash, key); err != nil {
		return err
	}
	return tx.Bucket(bucketRequests).Delete(key)
}

func dropClient(tx *bbolt.Tx, key, _ []byte) error { return tx.Bucket(bucketClients).Delete(key) }

// dropConnection deletes a connection with its scope record and every
// index entry naming it.
func dropConnection(tx *bbolt.Tx, key, raw []byte) error {
	var c oauth.Connection
	if err := json.Unmarshal(raw, &c); err != nil {
		return err
	}
	if err := dropScope(tx, key, nil); err != nil {
		return err
	}
	if err := dropDerived(tx, c); err != nil {
		return err
	}
	if err := tx.Bucket(bucketConnsByPairing).Delete(pairKey(c.PairingID, c.ID)); err != nil {
		return err
	}
	return tx.Bucket(bucketConnections).Delete(key)
}

// orphanScope finds scope records without their connection: written for
// one whose own write then failed (the approval and the exchange write
// the scope first). A record of the last hour may be waiting for its
// connection's write.
func orphanScope(now time.Time) func(*bbolt.Tx, []byte, []byte) (bool, error) {
	return func(tx *bbolt.Tx, key, raw []byte) (bool, error) {
		if tx.Bucket(bucketConnections).Get(key) != nil {
			return false, nil
		}
		var sc oauth.Scope
		if err := json.Unmarshal(raw, &sc); err != nil {
			return true, nil // not one an approval is writing: those decode
		}
		return now.Sub(sc.UpdatedAt) > time.Hour, nil
	}
}

// dropScope deletes a connection's scope record and its index entries.
func dropScope(tx *bbolt.Tx, key, _ []byte) error {
	if err := dropScopeIndex(tx, string(key)); err != nil {
		return err
	}
	return tx.Bucket(bucketScopes).Delete(key)
}

// deadFamily is the expiry refresh applies: such a family never refreshes
// again, and Verify refuses its access tokens once it is gone.
func deadFamily(now time.Time) func(oauth.Family) bool {
	return func(f oauth.Family) bool {
		return now.After(f.AbsoluteExpiry) || now.Sub(f.LastUsed) > oauth.FamilyIdleTTL
	}
}

func dropFamily(tx *bbolt.Tx, key, raw []byte) error {
	var f oauth.Family
	if err := json.Unmarshal(raw, &f); err != nil {
		return err
	}
	for _, h := range f.Hashes() {
		if err := dropIndex(tx, bucketFamilyByRefresh, h, key); err != nil {
			return err
		}
	}
	if err := tx.Bucket(bucketFamsByConn).Delete(pairKey(f.ConnectionID, string(key))); err != nil {
		return err
	}
	return tx.Bucket(bucketFamilies).Delete(key)
}

// dropIndex deletes the index entry key when it still names the record id.
func dropIndex(tx *bbolt.Tx, index, key, id []byte) error {
	if len(key) == 0 {
		return nil
	}
	b := tx.Bucket(index)
	if !bytes.Equal(b.Get(key), id) {
		return nil
	}
	return b.Delete(key)
}

// SweepEvery sweeps at once, then every interval, until ctx is done. It
// logs what each sweep deleted at debug level, failures at warn.
func (s *Store) SweepEvery(ctx context.Context, every time.Duration, now func() time.Time, log *slog.Logger) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		n, err := s.Sweep(ctx, now())
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			log.Warn("oauth store sweep", "deleted", n, "err", err)
		default:
			log.Debug("oauth store sweep", "deleted", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
