package redis

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tabrelay/tabrelay/oauth"
)

// The derived connections' indexes (issue 23 §2): sorted sets under the
// {conn} tag, one of each parent's children, one of each root's tree, one
// of each pairing's derived connections, each member scored by its
// connection's end (Unix ms). A count is one ZCOUNT of the live scores,
// never a read of the pairing's connections; ended members are trimmed
// at each write.

func (s *Store) derivedSets(c oauth.Connection) [3]string {
	return [3]string{s.key(famConnection, "kids", c.ParentID), s.key(famConnection, "tree", c.RootID),
		s.key(famConnection, "derived", c.PairingID)}
}

// PutDerivedConnection stores a derived connection and its index entries
// in one optimistic transaction that WATCHes the three sets it counts
// (oauth.Store): of two nodes' exchanges racing for the last place, the
// second counts again and is refused. The scope record (another tag) is
// written once the counts allow the child, before the child; a conflict
// that then finds no room leaves it to end with the child's life.
func (s *Store) PutDerivedConnection(ctx context.Context, c oauth.Connection, sc *oauth.Scope, lim oauth.DerivedLimits, now time.Time) error {
	raw, err := json.Marshal(c)
	if err != nil {
		return err
	}
	ttl := s.ttl(c.End())
	if ttl == 0 {
		return nil // it has ended already: nothing to keep
	}
	sets := s.derivedSets(c)
	limits := [3]oauth.DerivedFull{{Limit: oauth.LimitParent, Live: lim.PerParent},
		{Limit: oauth.LimitRoot, Live: lim.PerRoot}, {Limit: oauth.LimitPairing, Live: lim.PerPairing}}
	nowMs := strconv.FormatInt(now.UnixMilli(), 10)
	scoped := false
	err = s.watch(ctx, sets[:], func(tx *goredis.Tx) (func(goredis.Pipeliner), error) {
		for i, set := range sets {
			n, err := tx.ZCount(ctx, set, "("+nowMs, "+inf").Result()
			if err != nil {
				return nil, err
			}
			if int(n) >= limits[i].Live {
				return nil, &oauth.DerivedFull{Limit: limits[i].Limit, Live: int(n)}
			}
		}
		if sc != nil && !scoped {
			if err := s.PutScope(ctx, c.ID, *sc); err != nil {
				return nil, err
			}
			scoped = true
		}
		return func(p goredis.Pipeliner) {
			for _, set := range sets {
				p.ZRemRangeByScore(ctx, set, "-inf", nowMs)
				p.ZAdd(ctx, set, goredis.Z{Score: float64(c.End().UnixMilli()), Member: c.ID})
				extend(ctx, p, set, ttl)
			}
			of := s.pairingConns(c.PairingID)
			p.SAdd(ctx, of, c.ID)
			extend(ctx, p, of, ttl)
			p.Set(ctx, s.connKey(c.ID), raw, ttl)
		}, nil
	})
	if scoped {
		if xerr := s.expireScope(ctx, c.ID, ttl); err == nil {
			err = xerr
		}
	}
	return err
}

// DerivedChildren lists the live children of parent, from its set.
func (s *Store) DerivedChildren(ctx context.Context, parent string, now time.Time) ([]string, error) {
	ids, err := s.rdb.ZRangeByScore(ctx, s.key(famConnection, "kids", parent),
		&goredis.ZRangeBy{Min: "(" + strconv.FormatInt(now.UnixMilli(), 10), Max: "+inf"}).Result()
	slices.Sort(ids)
	return ids, err
}

// dropDerived queues taking a derived connection out of the counts: it
// was revoked, or it ended.
func (s *Store) dropDerived(ctx context.Context, p goredis.Pipeliner, c oauth.Connection) {
	if !c.Derived() {
		return
	}
	for _, set := range s.derivedSets(c) {
		p.ZRem(ctx, set, c.ID)
	}
}
