package redis

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

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
	raw, err := s.rdb.Get(ctx, s.scopeKey(connection)).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, oauth.ErrNotFound
	}
	return raw, err
}

// PutScope writes a connection's scope and its index entries in one
// transaction: the entries of the record it replaces go, the new ones come.
func (s *Store) PutScope(ctx context.Context, connection string, sc oauth.Scope) error {
	raw, err := json.Marshal(sc)
	if err != nil {
		return err
	}
	rec, in := s.scopeKey(connection), s.scopeIn(connection)
	members := scopeMembers(sc)
	return s.watch(ctx, []string{rec, in}, func(tx *goredis.Tx) (func(goredis.Pipeliner), error) {
		old, err := tx.SMembers(ctx, in).Result()
		if err != nil {
			return nil, err
		}
		return func(p goredis.Pipeliner) {
			for _, m := range old {
				p.SRem(ctx, s.scopeSet(m), connection)
			}
			p.Del(ctx, in)
			for _, m := range members {
				p.SAdd(ctx, s.scopeSet(m), connection)
				p.SAdd(ctx, in, m)
			}
			p.Set(ctx, rec, raw, 0)
		}, nil
	})
}

// ScopeHolders lists, sorted, the connections whose records grant tool
// (and action: an entry naming it or "*"; "" = any entry of the tool).
func (s *Store) ScopeHolders(ctx context.Context, tool, action string) ([]string, error) {
	var out []string
	var err error
	if action == "" {
		out, err = s.rdb.SMembers(ctx, s.scopeSet(toolMember(tool))).Result()
	} else {
		out, err = s.rdb.SUnion(ctx, s.scopeSet(actionMember(tool, action)), s.scopeSet(actionMember(tool, "*"))).Result()
	}
	slices.Sort(out)
	return out, err
}
