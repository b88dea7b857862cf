package redis

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tabrelay/tabrelay/oauth"
)

var _ oauth.Store = (*Store)(nil)

// Index entries name their record; a reader also checks that the record
// still holds what it was found by, so an entry left behind (by a Put
// over a record with other hashes, say) reads as not found, never as
// another record.

func (s *Store) requestKey(id string) string  { return s.key(famRequest, "rec", id) }
func (s *Store) codeKey(h []byte) string      { return s.key(famRequest, "code", hex.EncodeToString(h)) }
func (s *Store) authKey(h []byte) string      { return s.key(famRequest, "auth", hex.EncodeToString(h)) }
func (s *Store) connKey(id string) string     { return s.key(famConnection, "rec", id) }
func (s *Store) pairingConns(p string) string { return s.key(famConnection, "of", p) }
func (s *Store) familyKey(id string) string   { return s.key(famFamily, "rec", id) }
func (s *Store) refreshKey(h []byte) string {
	return s.key(famFamily, "refresh", hex.EncodeToString(h))
}
func (s *Store) connFamilies(c string) string { return s.key(famFamily, "of", c) }
func (s *Store) accessKey(h []byte) string    { return s.plainKey("at", hex.EncodeToString(h)) }

// read reads the record at key, or answers oauth.ErrNotFound.
func (s *Store) read(ctx context.Context, c getter, key, what string, v any) error {
	found, err := getJSON(ctx, c, key, what, v)
	if err == nil && !found {
		return oauth.ErrNotFound
	}
	return err
}

// indexed reads the id an index entry names.
func (s *Store) indexed(ctx context.Context, key string) (string, error) {
	id, err := s.rdb.Get(ctx, key).Result()
	if errors.Is(err, goredis.Nil) {
		return "", oauth.ErrNotFound
	}
	return id, err
}

// PutClient stores a registered client until its end.
func (s *Store) PutClient(ctx context.Context, c oauth.Client) error {
	ttl := s.ttl(c.End())
	if ttl == 0 {
		return s.rdb.Del(ctx, s.plainKey("client", c.ID)).Err()
	}
	return s.put(ctx, s.plainKey("client", c.ID), c, ttl)
}

// TouchClient records now as the client's last use: a token was issued
// to it. Its TTL runs oauth.ClientIdleTTL from there.
func (s *Store) TouchClient(ctx context.Context, id string, now time.Time) error {
	_, err := touch(ctx, s, s.plainKey("client", id), "client "+id, oauth.ClientTouch(now), oauth.Client.End)
	return err
}

// Client reads a registered client.
func (s *Store) Client(ctx context.Context, id string) (c oauth.Client, err error) {
	return c, s.read(ctx, s.rdb, s.plainKey("client", id), "client "+id, &c)
}

// put writes v at key alone, with ttl (0: none).
func (s *Store) put(ctx context.Context, key string, v any, ttl time.Duration) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.rdb.Set(ctx, key, raw, ttl).Err()
}

// requestEnd is when a connect request can be of no more use: its code
// can no longer be approved nor its authorization code exchanged, and the
// waiting page has had oauth.AuthCodeTTL past both.
func requestEnd(r oauth.ConnectRequest) time.Time {
	end := r.ExpiresAt
	if r.AuthCodeExpiresAt.After(end) {
		end = r.AuthCodeExpiresAt
	}
	return end.Add(oauth.AuthCodeTTL)
}

// PutConnectRequest stores a new connect request and indexes its codes.
func (s *Store) PutConnectRequest(ctx context.Context, r oauth.ConnectRequest) error {
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return s.multi(ctx, func(p goredis.Pipeliner) { s.writeRequest(ctx, p, r, raw, nil) })
}

// writeRequest queues r with its index entries, all with r's TTL, or
// their deletion once r has ended; oldAuth is the authorization-code hash
// r held before, whose entry goes when it changed.
func (s *Store) writeRequest(ctx context.Context, p goredis.Pipeliner, r oauth.ConnectRequest, raw, oldAuth []byte) {
	ttl := s.ttl(requestEnd(r))
	if oldAuth != nil && !bytes.Equal(oldAuth, r.AuthCodeHash) {
		p.Del(ctx, s.authKey(oldAuth))
	}
	write := func(key string, v any) {
		if ttl == 0 {
			p.Del(ctx, key)
		} else {
			p.Set(ctx, key, v, ttl)
		}
	}
	if r.CodeHash != nil {
		write(s.codeKey(r.CodeHash), r.ID)
	}
	if r.AuthCodeHash != nil {
		write(s.authKey(r.AuthCodeHash), r.ID)
	}
	write(s.requestKey(r.ID), raw)
}

// ConnectRequest reads a connect request.
func (s *Store) ConnectRequest(ctx context.Context, id string) (r oauth.ConnectRequest, err error) {
	return r, s.read(ctx, s.rdb, s.requestKey(id), "connect request "+id, &r)
}

// ConnectRequestByCode finds a request by its connect code's hash.
func (s *Store) ConnectRequestByCode(ctx context.Context, codeHash []byte) (oauth.ConnectRequest, error) {
	return s.requestBy(ctx, s.codeKey(codeHash), func(r *oauth.ConnectRequest) []byte { return r.CodeHash }, codeHash)
}

// ConnectRequestByAuthCode finds a request by its authorization code's hash.
func (s *Store) ConnectRequestByAuthCode(ctx context.Context, h []byte) (oauth.ConnectRequest, error) {
	return s.requestBy(ctx, s.authKey(h), func(r *oauth.ConnectRequest) []byte { return r.AuthCodeHash }, h)
}

// requestBy reads the request the index entry names, if it still holds h.
func (s *Store) requestBy(ctx context.Context, index string, field func(*oauth.ConnectRequest) []byte, h []byte) (oauth.ConnectRequest, error) {
	var r oauth.ConnectRequest
	id, err := s.indexed(ctx, index)
	if err == nil {
		err = s.read(ctx, s.rdb, s.requestKey(id), "connect request "+id, &r)
	}
	if err == nil && !bytes.Equal(field(&r), h) {
		return oauth.ConnectRequest{}, oauth.ErrNotFound
	}
	return r, err
}

// UpdateConnectRequest changes a request in one optimistic transaction,
// keeping the authorization-code index and the TTLs in step.
func (s *Store) UpdateConnectRequest(ctx context.Context, id string, fn func(*oauth.ConnectRequest) error) (r oauth.ConnectRequest, err error) {
	key := s.requestKey(id)
	err = s.watch(ctx, []string{key}, func(tx *goredis.Tx) (func(goredis.Pipeliner), error) {
		r = oauth.ConnectRequest{}
		if err := s.read(ctx, tx, key, "connect request "+id, &r); err != nil {
			return nil, err
		}
		before := r.AuthCodeHash
		if err := fn(&r); err != nil {
			return nil, err
		}
		raw, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		return func(p goredis.Pipeliner) { s.writeRequest(ctx, p, r, raw, before) }, nil
	})
	return r, err
}

// PutConnection stores a connection until its end and indexes it by
// pairing. The pairing's set lives as long as its longest-lived member;
// members that ended leave it when it is read.
func (s *Store) PutConnection(ctx context.Context, c oauth.Connection) error {
	raw, err := json.Marshal(c)
	if err != nil {
		return err
	}
	ttl := s.ttl(c.End())
	if ttl == 0 {
		return nil // it has ended already: nothing to keep
	}
	err = s.multi(ctx, func(p goredis.Pipeliner) {
		of := s.pairingConns(c.PairingID)
		p.SAdd(ctx, of, c.ID)
		extend(ctx, p, of, ttl)
		p.Set(ctx, s.connKey(c.ID), raw, ttl)
	})
	if err == nil {
		err = s.expireScope(ctx, c.ID, ttl) // another hash tag: not in the transaction
	}
	return err
}

// extend queues making key live at least ttl more: a set or list that
// lives as long as its longest-lived member.
func extend(ctx context.Context, p goredis.Pipeliner, key string, ttl time.Duration) {
	p.Do(ctx, "pexpire", key, ttl.Milliseconds(), "nx")
	p.Do(ctx, "pexpire", key, ttl.Milliseconds(), "gt")
}

// Connection reads a connection.
func (s *Store) Connection(ctx context.Context, id string) (oauth.Connection, error) {
	return s.connection(ctx, s.rdb, id)
}

func (s *Store) connection(ctx context.Context, g getter, id string) (c oauth.Connection, err error) {
	return c, s.read(ctx, g, s.connKey(id), "connection "+id, &c)
}

// UpdateConnection changes a connection in one optimistic transaction.
func (s *Store) UpdateConnection(ctx context.Context, id string, fn func(*oauth.Connection) error) (c oauth.Connection, err error) {
	key := s.connKey(id)
	err = s.watch(ctx, []string{key}, func(tx *goredis.Tx) (func(goredis.Pipeliner), error) {
		c = oauth.Connection{}
		if err := s.read(ctx, tx, key, "connection "+id, &c); err != nil {
			return nil, err
		}
		pairing := c.PairingID
		if err := fn(&c); err != nil {
			return nil, err
		}
		raw, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		ttl := s.ttl(c.End())
		return func(p goredis.Pipeliner) {
			if c.Revoked || ttl == 0 {
				s.dropDerived(ctx, p, c)
			}
			if c.PairingID != pairing || ttl == 0 {
				p.SRem(ctx, s.pairingConns(pairing), id)
			}
			if ttl == 0 {
				p.Del(ctx, key)
				return
			}
			if c.PairingID != pairing {
				p.SAdd(ctx, s.pairingConns(c.PairingID), id)
				extend(ctx, p, s.pairingConns(c.PairingID), ttl)
			}
			p.Set(ctx, key, raw, ttl) // a record of an older build gets its TTL here
		}, nil
	})
	return c, err
}

// ConnectionsOfPairing lists a pairing's connections, revoked ones too,
// by id.
func (s *Store) ConnectionsOfPairing(ctx context.Context, pairing string) ([]oauth.Connection, error) {
	set := s.pairingConns(pairing)
	ids, err := s.rdb.SMembers(ctx, set).Result()
	if err != nil {
		return nil, err
	}
	conns, err := readAll[oauth.Connection](ctx, s, ids, s.connKey, "connection")
	if err == nil && len(conns) < len(ids) {
		// Derived connections whose records expired with their tokens
		// leave the list now.
		found := make(map[string]bool, len(conns))
		for _, c := range conns {
			found[c.ID] = true
		}
		ended := make([]any, 0, len(ids)-len(conns))
		for _, id := range ids {
			if !found[id] {
				ended = append(ended, id)
			}
		}
		_ = s.rdb.SRem(ctx, set, ended...).Err() // failed: the next listing tries again
	}
	conns = slices.DeleteFunc(conns, func(c oauth.Connection) bool { return c.PairingID != pairing })
	return conns, err
}

// readAll reads the records of ids in one MGET (their keys share a tag),
// sorted by id, leaving out those that are gone.
func readAll[T any](ctx context.Context, s *Store, ids []string, key func(string) string, what string) ([]T, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	slices.Sort(ids)
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = key(id)
	}
	vals, err := s.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, err
	}
	var out []T
	for i, v := range vals {
		raw, ok := v.(string)
		if !ok {
			continue
		}
		var rec T
		if err := json.Unmarshal([]byte(raw), &rec); err != nil {
			return out, fmt.Errorf("redis store: %s %s does not decode: %w", what, ids[i], err)
		}
		out = append(out, rec)
	}
	return out, nil
}

// familyEnd is when a family can never refresh again (oauth's refresh
// applies the same rule).
func familyEnd(f oauth.Family) time.Time {
	idle := f.LastUsed.Add(oauth.FamilyIdleTTL)
	if f.AbsoluteExpiry.Before(idle) {
		return f.AbsoluteExpiry
	}
	return idle
}

// PutFamily stores a new family and indexes its hashes and connection.
func (s *Store) PutFamily(ctx context.Context, f oauth.Family) error {
	raw, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return s.multi(ctx, func(p goredis.Pipeliner) { s.writeFamily(ctx, p, f, raw, oauth.Family{}) })
}

// writeFamily queues f with its index entries, all with f's TTL, or their
// deletion once f has ended; before is f as it was (zero for a new one),
// whose hashes f no longer holds lose their entries.
func (s *Store) writeFamily(ctx context.Context, p goredis.Pipeliner, f oauth.Family, raw []byte, before oauth.Family) {
	ttl := s.ttl(familyEnd(f))
	after := f.Hashes()
	for _, h := range before.Hashes() {
		if ttl == 0 || !slices.ContainsFunc(after, func(a []byte) bool { return bytes.Equal(a, h) }) {
			p.Del(ctx, s.refreshKey(h))
		}
	}
	if before.ConnectionID != "" && before.ConnectionID != f.ConnectionID {
		p.ZRem(ctx, s.connFamilies(before.ConnectionID), f.ID)
	}
	of := s.connFamilies(f.ConnectionID)
	if ttl == 0 {
		for _, h := range after {
			p.Del(ctx, s.refreshKey(h))
		}
		p.ZRem(ctx, of, f.ID)
		p.Del(ctx, s.familyKey(f.ID))
		return
	}
	for _, h := range after {
		p.Set(ctx, s.refreshKey(h), f.ID, ttl)
	}
	// The connection's list lives as long as its longest-lived family:
	// each member's score is its family's end, ended ones are pruned here.
	now := s.now().UnixMilli()
	p.ZAdd(ctx, of, goredis.Z{Score: float64(familyEnd(f).UnixMilli()), Member: f.ID})
	p.ZRemRangeByScore(ctx, of, "-inf", "("+strconv.FormatInt(now, 10))
	extend(ctx, p, of, ttl)
	p.Set(ctx, s.familyKey(f.ID), raw, ttl)
}

// Family reads a family.
func (s *Store) Family(ctx context.Context, id string) (oauth.Family, error) {
	return s.family(ctx, s.rdb, id)
}

func (s *Store) family(ctx context.Context, g getter, id string) (f oauth.Family, err error) {
	return f, s.read(ctx, g, s.familyKey(id), "family "+id, &f)
}

// FamilyByRefresh finds the family holding a refresh hash.
func (s *Store) FamilyByRefresh(ctx context.Context, h []byte) (oauth.Family, error) {
	var f oauth.Family
	id, err := s.indexed(ctx, s.refreshKey(h))
	if err == nil {
		err = s.read(ctx, s.rdb, s.familyKey(id), "family "+id, &f)
	}
	if err == nil && !slices.ContainsFunc(f.Hashes(), func(x []byte) bool { return bytes.Equal(x, h) }) {
		return oauth.Family{}, oauth.ErrNotFound
	}
	return f, err
}

// UpdateFamily changes a family in one optimistic transaction: of two
// rotations of one token, the second reads what the first wrote. The
// refresh index and the TTLs follow what fn did.
func (s *Store) UpdateFamily(ctx context.Context, id string, fn func(*oauth.Family) error) (f oauth.Family, err error) {
	key := s.familyKey(id)
	err = s.watch(ctx, []string{key}, func(tx *goredis.Tx) (func(goredis.Pipeliner), error) {
		var before oauth.Family
		if err := s.read(ctx, tx, key, "family "+id, &before); err != nil {
			return nil, err
		}
		f = before
		f.Superseded = slices.Clone(before.Superseded) // fn may change it in place
		if err := fn(&f); err != nil {
			return nil, err
		}
		raw, err := json.Marshal(f)
		if err != nil {
			return nil, err
		}
		return func(p goredis.Pipeliner) { s.writeFamily(ctx, p, f, raw, before) }, nil
	})
	return f, err
}

// FamiliesOfConnection lists a connection's families, by id.
func (s *Store) FamiliesOfConnection(ctx context.Context, connection string) ([]oauth.Family, error) {
	ids, err := s.rdb.ZRange(ctx, s.connFamilies(connection), 0, -1).Result()
	if err != nil {
		return nil, err
	}
	fams, err := readAll[oauth.Family](ctx, s, ids, s.familyKey, "family")
	fams = slices.DeleteFunc(fams, func(f oauth.Family) bool { return f.ConnectionID != connection })
	return fams, err
}

// PutAccessToken stores an access token by its hash until it expires.
func (s *Store) PutAccessToken(ctx context.Context, t oauth.AccessToken) error {
	ttl := s.ttl(t.ExpiresAt)
	if ttl == 0 {
		return s.rdb.Del(ctx, s.accessKey(t.Hash)).Err()
	}
	return s.put(ctx, s.accessKey(t.Hash), t, ttl)
}

// AccessToken reads an access token by its hash.
func (s *Store) AccessToken(ctx context.Context, h []byte) (oauth.AccessToken, error) {
	return s.accessToken(ctx, s.rdb, h)
}

func (s *Store) accessToken(ctx context.Context, g getter, h []byte) (t oauth.AccessToken, err error) {
	return t, s.read(ctx, g, s.accessKey(h), "access token", &t)
}

// DeleteAccessToken forgets an access token.
func (s *Store) DeleteAccessToken(ctx context.Context, h []byte) error {
	return s.rdb.Del(ctx, s.accessKey(h)).Err()
}
