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

// Sweep deletes, as of now, the authorization server's records no one can
// use any more, with their index entries, and returns how many records it
// deleted. The rules are those of oauth/storetest.Sweeper:
//
//   - an access token once now is past its ExpiresAt;
//   - a connect request once now is past its ExpiresAt by more than
//     oauth.AuthCodeTTL and past its AuthCodeExpiresAt;
//   - a refresh family, revoked or not, once now is past its
//     AbsoluteExpiry or its LastUsed by more than oauth.FamilyIdleTTL;
//   - a pairing once now is past its LastSeen by more
//     than pairing.IdleTTL.
//
// Clients and the person's connections are kept (derived connections go
// with their token): connections are the person's list,
// and a revoked one is hidden by the server, not deleted. Each record is
// judged again in the transaction that deletes it, so one updated since
// the scan (a family just refreshed) is kept. A record that does not
// decode is left alone and reported in the error.
func (s *Store) Sweep(ctx context.Context, now time.Time) (int, error) {
	kinds := []struct {
		bucket []byte
		dead   func(raw []byte) (bool, error)
		drop   func(tx *bbolt.Tx, key, raw []byte) error
	}{
		{bucketAccess, deadAccessToken(now), dropAccessToken},
		{bucketRequests, deadRequest(now), dropRequest},
		{bucketFamilies, deadFamily(now), dropFamily},
		{bucketConnections, deadDerived(now), dropDerived},
		{bucketPairings, deadPairing(now), dropPairing},
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

// sweepBucket scans bucket for dead records, then deletes them in batches.
// Its error is the first record that did not decode, or a failed write.
func (s *Store) sweepBucket(ctx context.Context, bucket []byte, dead func([]byte) (bool, error),
	drop func(tx *bbolt.Tx, key, raw []byte) error) (int, error) {
	var keys [][]byte
	var decodeErr error
	err := s.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucket).ForEach(func(k, v []byte) error {
			ok, err := dead(v)
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
				if ok, _ := dead(raw); raw == nil || !ok {
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

func deadAccessToken(now time.Time) func([]byte) (bool, error) {
	return func(raw []byte) (bool, error) {
		var t oauth.AccessToken
		if err := json.Unmarshal(raw, &t); err != nil {
			return false, err
		}
		return now.After(t.ExpiresAt), nil
	}
}

func dropAccessToken(tx *bbolt.Tx, key, _ []byte) error { return tx.Bucket(bucketAccess).Delete(key) }

func deadPairing(now time.Time) func([]byte) (bool, error) {
	return func(raw []byte) (bool, error) {
		var p pairing.Record
		if err := json.Unmarshal(raw, &p); err != nil {
			return false, err
		}
		return now.Sub(p.LastSeen) > pairing.IdleTTL, nil
	}
}

func dropPairing(tx *bbolt.Tx, key, _ []byte) error { return tx.Bucket(bucketPairings).Delete(key) }

// deadRequest: the connect code can no longer be approved, an approval not
// fetched by the waiting page (which polls every few seconds) within
// AuthCodeTTL after it is abandoned, and no code of it can be exchanged.
func deadRequest(now time.Time) func([]byte) (bool, error) {
	return func(raw []byte) (bool, error) {
		var r oauth.ConnectRequest
		if err := json.Unmarshal(raw, &r); err != nil {
			return false, err
		}
		return now.After(r.ExpiresAt.Add(oauth.AuthCodeTTL)) && now.After(r.AuthCodeExpiresAt), nil
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

// deadFamily is the expiry refresh applies: such a family never refreshes
// again, and Verify refuses its access tokens once it is gone.
// deadDerived finds derived connections past their token's end; the
// person's own connections have no expiry and are kept.
func deadDerived(now time.Time) func([]byte) (bool, error) {
	return func(raw []byte) (bool, error) {
		var c oauth.Connection
		if err := json.Unmarshal(raw, &c); err != nil {
			return false, err
		}
		return !c.ExpiresAt.IsZero() && now.After(c.ExpiresAt), nil
	}
}

func dropDerived(tx *bbolt.Tx, key, raw []byte) error {
	var c oauth.Connection
	if err := json.Unmarshal(raw, &c); err != nil {
		return err
	}
	if err := dropScopeIndex(tx, c.ID); err != nil {
		return err
	}
	if err := tx.Bucket(bucketScopes).Delete(key); err != nil {
		return err
	}
	if err := tx.Bucket(bucketConnsByPairing).Delete(pairKey(c.PairingID, c.ID)); err != nil {
		return err
	}
	return tx.Bucket(bucketConnections).Delete(key)
}

func deadFamily(now time.Time) func([]byte) (bool, error) {
	return func(raw []byte) (bool, error) {
		var f oauth.Family
		if err := json.Unmarshal(raw, &f); err != nil {
			return false, err
		}
		return now.After(f.AbsoluteExpiry) || now.Sub(f.LastUsed) > oauth.FamilyIdleTTL, nil
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
