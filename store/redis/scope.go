package redis

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tabrelay/tabrelay/oauth"
)

// Scope records and their reverse index (SPEC §8: "who may call X" is
// answered from an index kept with every write, not a scan). All of it is
// under the {scope} tag, so a record and its index change in one MULTI.
// Each connection's in:<id> set lists the index sets that name it, so a
// write removes the old entries without parsing the record it replaces
// (which may be damaged).

func (s *Store) scopeKey(conn string) string { return s.key(famScope, "rec", conn) }
func (s *Store) scopeIn(conn string) string  { return s.key(famScope, "in", conn) }

// scopeSet names an index set by its member of in:<id>.
func (s *Store) scopeSet(member string) string { return s.prefix + "{" + famScope + "}:" + member }

func actionMember(tool, action string) string { return "idx:" + tool + "\x00" + action }
func toolMember(tool string) string           { return "tool:" + tool }

// scopeMembers lists the index sets a connection with sc belongs to: one
// per tool and action it names, and one per tool (for "any action").
func scopeMembers(sc oauth.Scope) []string {
	var out []string
	for _, e := range sc.Entries {
		for _, a := range e.Actions {
			out = append(out, actionMember(e.Tool, a), toolMember(e.Tool))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ScopeRecord returns a connection's own scope record as stored.
func (s *Store) ScopeRecord(ctx context.Context, connection string) ([]byte, error) {
	return s.scopeRecord(ctx, s.rdb, connection)
}

func (s *Store) scopeRecord(ctx context.Context, g getter, connection string) ([]byte, error) {
	raw, err := g.Get(ctx, s.scopeKey(connection)).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, oauth.ErrNotFound
	}
	return raw, err
}

// PutScope writes a connection's scope and its index entries in one
// transaction: the entries of the record it replaces go, the new ones come.
func (s *Store) PutScope(ctx context.Context, connection string, sc oauth.Scope) error {
	_, err := s.UpdateScope(ctx, connection, func([]byte) (oauth.Scope, error) { return sc, nil })
	return err
}

// UpdateScope reads a connection's record under WATCH, lets fn make the
// new one, and writes it with its index entries in one MULTI; a write by
// another node meanwhile reruns it.
func (s *Store) UpdateScope(ctx context.Context, connection string, fn func([]byte) (oauth.Scope, error)) (oauth.Scope, error) {
	rec, in := s.scopeKey(connection), s.scopeIn(connection)
	var sc oauth.Scope
	var members []string
	err := s.watch(ctx, []string{rec, in}, func(tx *goredis.Tx) (func(goredis.Pipeliner), error) {
		cur, err := tx.Get(ctx, rec).Bytes()
		if errors.Is(err, goredis.Nil) {
			cur, err = nil, nil
		}
		if err != nil {
			return nil, err
		}
		if sc, err = fn(cur); err != nil {
			return nil, err
		}
		raw, err := json.Marshal(sc)
		if err != nil {
			return nil, err
		}
		members = scopeMembers(sc)
		old, err := tx.SMembers(ctx, in).Result()
		if err != nil {
			return nil, err
		}
		// The record ends with its connection (expireScope, when the
		// connection is stored): a new record keeps that end. Until then,
		// or for a record of an older build, it lives as long as any
		// connection may (a record whose connection was never stored
		// goes too).
		left, err := tx.PTTL(ctx, rec).Result()
		if err != nil {
			return nil, err
		}
		if left <= 0 {
			left = oauth.ConnectionTTL
		}
		return func(p goredis.Pipeliner) {
			for _, m := range old {
				p.SRem(ctx, s.scopeSet(m), connection)
			}
			p.Del(ctx, in)
			for _, m := range members {
				p.SAdd(ctx, s.scopeSet(m), connection)
				extend(ctx, p, s.scopeSet(m), left)
				p.SAdd(ctx, in, m)
			}
			p.Set(ctx, rec, raw, left)
			p.PExpire(ctx, in, left)
		}, nil
	})
	if err != nil {
		return oauth.Scope{}, err
	}
	s.pruneSample(ctx, members)
	return sc, nil
}

// expireScope gives a connection's scope record (written before the
// connection: oauth's approval and exchange) the connection's end. The
// index entries it leaves in the shared sets go when a query finds them
// (ScopeHolders), or a later write's sample does (pruneSample). A
// connection without a scope record of its own has nothing to expire.
func (s *Store) expireScope(ctx context.Context, connection string, ttl time.Duration) error {
	_, err := s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		p.PExpire(ctx, s.scopeKey(connection), ttl)
		p.PExpire(ctx, s.scopeIn(connection), ttl)
		return nil
	})
	return err
}

// pruneSample is how the shared index sets stay bounded when nobody asks
// who holds a tool: each write that adds a connection to sets removes,
// from a random sample of each, the connections that ended. A set then
// holds ended connections in at most about one in pruneSampleSize of its
// entries. A failure leaves them for the next write or query.
func (s *Store) pruneSample(ctx context.Context, members []string) {
	if len(members) == 0 {
		return
	}
	samples := make([]*goredis.StringSliceCmd, len(members))
	_, err := s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, m := range members {
			samples[i] = p.SRandMemberN(ctx, s.scopeSet(m), pruneSampleSize)
		}
		return nil
	})
	if err != nil {
		return
	}
	var ids []string
	for _, c := range samples {
		ids = append(ids, c.Val()...)
	}
	slices.Sort(ids)
	ended, err := s.ended(ctx, slices.Compact(ids))
	if err != nil || len(ended) == 0 {
		return
	}
	_, _ = s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, m := range members {
			var gone []any
			for _, id := range samples[i].Val() {
				if ended[id] {
					gone = append(gone, id)
				}
			}
			if len(gone) > 0 {
				p.SRem(ctx, s.scopeSet(m), gone...)
			}
		}
		return nil
	})
}

// pruneSampleSize is how many entries of an index set each write checks.
const pruneSampleSize = 8

// ScopeHolders lists, sorted, the connections whose records have an
// entry for tool with one of actions (none: any entry for tool).
func (s *Store) ScopeHolders(ctx context.Context, tool string, actions []string) ([]string, error) {
	var out []string
	var err error
	sets := []string{s.scopeSet(toolMember(tool))}
	if len(actions) == 0 {
		out, err = s.rdb.SMembers(ctx, sets[0]).Result()
	} else {
		sets = sets[:0]
		for _, a := range actions {
			sets = append(sets, s.scopeSet(actionMember(tool, a)))
		}
		out, err = s.rdb.SUnion(ctx, sets...).Result()
	}
	if err != nil {
		return nil, err
	}
	out, err = s.dropEnded(ctx, out, sets)
	slices.Sort(out)
	return out, err
}

// dropEnded removes from ids, and from the index sets, the connections
// whose scope keys expired with them.
func (s *Store) dropEnded(ctx context.Context, ids, sets []string) ([]string, error) {
	ended, err := s.ended(ctx, ids)
	if err != nil || len(ended) == 0 {
		return ids, err
	}
	gone := make([]any, 0, len(ended))
	kept := ids[:0]
	for _, id := range ids {
		if ended[id] {
			gone = append(gone, id)
		} else {
			kept = append(kept, id)
		}
	}
	_, err = s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for _, set := range sets {
			p.SRem(ctx, set, gone...)
		}
		return nil
	})
	return kept, err
}

// ended says which of ids name connections that ended: every connection
// in an index set has its in:<id> set until its scope keys expire.
func (s *Store) ended(ctx context.Context, ids []string) (map[string]bool, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	exists := make([]*goredis.IntCmd, len(ids))
	_, err := s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, id := range ids {
			exists[i] = p.Exists(ctx, s.scopeIn(id))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for i, id := range ids {
		if exists[i].Val() == 0 {
			out[id] = true
		}
	}
	return out, nil
}
