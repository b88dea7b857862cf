package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tabrelay/tabrelay/internal/redistest"
	"github.com/tabrelay/tabrelay/oauth"
	"github.com/tabrelay/tabrelay/oauth/storetest"
	"github.com/tabrelay/tabrelay/pairing"
	tabstoretest "github.com/tabrelay/tabrelay/pairing/storetest"
	"github.com/tabrelay/tabrelay/protocol"
)

// suiteNow is oauth/storetest's fixed now: its records are dated by it, so
// the store computes their TTLs on it too (on the wall clock, a record of
// that suite dated in the past would be gone as soon as written).
var suiteNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

var prefixes atomic.Int64

// newStore returns a store under a prefix of its own on client, on the
// suite's clock.
func newStore(client goredis.UniversalClient) *Store {
	s := New(client, fmt.Sprintf("test%d:", prefixes.Add(1)))
	s.now = func() time.Time { return suiteNow }
	return s
}

// aging is a store whose clock its test moves: ExpireAsOf deletes each
// key under the store's prefix whose TTL, counted from the store's clock,
// runs out by now, as Redis will then (its own clock cannot be moved).
// The lifetimes the suites check are the TTLs the store wrote.
type aging struct{ *Store }

func (a aging) ExpireAsOf(ctx context.Context, now time.Time) error {
	expire := func(ctx context.Context, c goredis.Cmdable) error {
		iter := c.Scan(ctx, 0, a.prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			left, err := c.PTTL(ctx, iter.Val()).Result()
			if err != nil {
				return err
			}
			if left > 0 && !a.now().Add(left).After(now) {
				if err := c.Del(ctx, iter.Val()).Err(); err != nil {
					return err
				}
			}
		}
		return iter.Err()
	}
	if cc, ok := a.rdb.(*goredis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error { return expire(ctx, c) })
	}
	return expire(ctx, a.rdb)
}

// suites runs both store suites on stores under prefixes of their own on client.
func suites(t *testing.T, client goredis.UniversalClient) {
	t.Run("oauth", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) oauth.Store { return aging{newStore(client)} })
	})
	t.Run("pairings", func(t *testing.T) {
		tabstoretest.Run(t, func(t *testing.T) tabstoretest.Store { return aging{newStore(client)} })
	})
}

func TestStoreContracts(t *testing.T) { suites(t, startRedis(t)) }

// TestContractsOnCluster runs both suites through a cluster client on a
// Redis Cluster of three masters, which refuses (CROSSSLOT) any
// transaction or multi-key command whose keys are in more than one slot:
// it proves the key layout's hash tags, with the families spread over
// the masters.
func TestContractsOnCluster(t *testing.T) { suites(t, redistest.StartCluster(t, 3, 0).Client()) }

// TestContractsOnSentinel runs both suites through a failover client of a
// master with a replica and three sentinels.
func TestContractsOnSentinel(t *testing.T) { suites(t, redistest.StartSentinel(t).Client()) }

// TestLifetimes: Redis expires what the embedded store sweeps, so every
// ephemeral record and its index entries carry the record's remaining
// life, and the person's records carry none.
func TestLifetimes(t *testing.T) {
	client := startRedis(t)
	ctx := context.Background()
	s := newStore(client)
	hash := func(name string) []byte { return []byte(name) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	req := oauth.ConnectRequest{ID: "r1", CodeHash: hash("code"), CreatedAt: suiteNow,
		ExpiresAt: suiteNow.Add(oauth.ConnectCodeTTL), Status: oauth.RequestPending}
	must(s.PutConnectRequest(ctx, req))
	checkTTL(t, client, oauth.ConnectCodeTTL+oauth.AuthCodeTTL, s.requestKey("r1"), s.codeKey(hash("code")))
	// Approved at the last moment, the code fetched later: it lives on.
	_, err := s.UpdateConnectRequest(ctx, "r1", func(r *oauth.ConnectRequest) error {
		r.AuthCodeHash, r.AuthCodeExpiresAt = hash("auth"), suiteNow.Add(oauth.ConnectCodeTTL+30*time.Second)
		return nil
	})
	must(err)
	checkTTL(t, client, oauth.ConnectCodeTTL+30*time.Second+oauth.AuthCodeTTL,
		s.requestKey("r1"), s.codeKey(hash("code")), s.authKey(hash("auth")))

	fam := oauth.Family{ID: "f1", ConnectionID: "conn-a", CreatedAt: suiteNow, LastUsed: suiteNow,
		AbsoluteExpiry: suiteNow.Add(oauth.FamilyAbsoluteTTL), Current: hash("t0")}
	must(s.PutFamily(ctx, fam))
	checkTTL(t, client, oauth.FamilyIdleTTL, s.familyKey("f1"), s.refreshKey(hash("t0")), s.connFamilies("conn-a"))
	_, err = s.UpdateFamily(ctx, "f1", func(f *oauth.Family) error {
		f.Previous, f.Current, f.LastUsed = f.Current, hash("t1"), suiteNow.Add(time.Hour)
		return nil
	})
	must(err)
	checkTTL(t, client, oauth.FamilyIdleTTL+time.Hour,
		s.familyKey("f1"), s.refreshKey(hash("t0")), s.refreshKey(hash("t1")), s.connFamilies("conn-a"))
	// Near its absolute expiry a family ends before it is idle.
	old := oauth.Family{ID: "f2", ConnectionID: "conn-a", LastUsed: suiteNow, AbsoluteExpiry: suiteNow.Add(time.Hour),
		Current: hash("u0")}
	must(s.PutFamily(ctx, old))
	checkTTL(t, client, time.Hour, s.familyKey("f2"), s.refreshKey(hash("u0")))
	checkTTL(t, client, oauth.FamilyIdleTTL+time.Hour, s.connFamilies("conn-a")) // the longest-lived member's

	must(s.PutAccessToken(ctx, oauth.AccessToken{Hash: hash("access"), ExpiresAt: suiteNow.Add(oauth.AccessTokenTTL)}))
	checkTTL(t, client, oauth.AccessTokenTTL, s.accessKey(hash("access")))

	// A client lives ClientUnusedTTL until a token renews it (issue 15,
	// defect 6).
	must(s.PutClient(ctx, oauth.Client{ID: "c1", CreatedAt: suiteNow}))
	checkTTL(t, client, oauth.ClientUnusedTTL, s.plainKey("client", "c1"))
	must(s.TouchClient(ctx, "c1", suiteNow.Add(time.Hour)))
	checkTTL(t, client, oauth.ClientIdleTTL+time.Hour, s.plainKey("client", "c1"))

	// A person's connection, its scope and the sets naming it end with it;
	// a scope written first lives as long as any connection may.
	must(s.PutScope(ctx, "conn-a", oauth.Scope{Entries: []protocol.ScopeEntry{{Tool: "counter", Actions: []string{"get"}}}}))
	checkTTL(t, client, oauth.ConnectionTTL, s.scopeKey("conn-a"), s.scopeIn("conn-a"))
	must(s.PutConnection(ctx, oauth.Connection{ID: "conn-a", PairingID: "p1", CreatedAt: suiteNow.Add(-time.Hour)}))
	checkTTL(t, client, oauth.ConnectionTTL-time.Hour, s.connKey("conn-a"), s.pairingConns("p1"),
		s.scopeKey("conn-a"), s.scopeIn("conn-a"))
	checkTTL(t, client, oauth.ConnectionTTL, s.scopeSet(actionMember("counter", "get")), s.scopeSet(toolMember("counter")))
	// A derived connection ends with its token, also once changed.
	must(s.PutConnection(ctx, oauth.Connection{ID: "conn-d", PairingID: "p1", ParentID: "conn-a", ExpiresAt: suiteNow.Add(time.Hour)}))
	checkTTL(t, client, time.Hour, s.connKey("conn-d"))
	_, err = s.UpdateConnection(ctx, "conn-d", func(c *oauth.Connection) error { c.Revoked = true; return nil })
	must(err)
	checkTTL(t, client, time.Hour, s.connKey("conn-d"))
	checkTTL(t, client, oauth.ConnectionTTL-time.Hour, s.pairingConns("p1")) // its longest-lived member's

	// An attempt bucket lives until it is full again.
	_, err = s.TakeAttempt(ctx, "wrong-code", oauth.Rate{Burst: 10, Every: time.Minute}, suiteNow)
	must(err)
	checkTTL(t, client, time.Minute, s.plainKey("limit", "wrong-code"))

	// A pairing is renewed by its tabs' hellos, from the last one.
	_, err = s.TouchPairing(ctx, "p1", hash("secret"), suiteNow.Add(-time.Hour))
	must(err)
	checkTTL(t, client, pairing.IdleTTL-time.Hour, s.plainKey("pairing", "p1"))
}

// checkTTL fails unless every key exists with a TTL of want (0: none),
// less the few seconds the test may take.
func checkTTL(t *testing.T, client goredis.UniversalClient, want time.Duration, keys ...string) {
	t.Helper()
	for _, k := range keys {
		got, err := client.PTTL(context.Background(), k).Result()
		switch {
		case err != nil:
			t.Fatalf("PTTL %q: %v", k, err)
		case got == -2: // PTTL's "no such key"
			t.Fatalf("%q is missing", k)
		case want == 0 && got >= 0:
			t.Fatalf("%q expires in %v, want no TTL", k, got)
		case want > 0 && (got > want || got < want-5*time.Second):
			t.Fatalf("%q expires in %v, want %v", k, got, want)
		}
	}
}

// TestDerivedConnectionsLeaveNothingBehind: a derived connection (a
// sub-agent's token exchange) and its own scope end with its token, and
// what they left in the shared sets goes when a query finds it.
func TestDerivedConnectionsLeaveNothingBehind(t *testing.T) {
	client := startRedis(t)
	ctx := context.Background()
	s := newStore(client)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	counter := oauth.Scope{Entries: []protocol.ScopeEntry{{Tool: "counter", Actions: []string{"get"}}}}
	must(s.PutConnection(ctx, oauth.Connection{ID: "conn-a", PairingID: "p1", CreatedAt: suiteNow}))
	must(s.PutScope(ctx, "conn-a", counter))
	// As oauth's exchange writes a scoped child: its scope, then itself.
	const life = 300 * time.Millisecond
	must(s.PutScope(ctx, "conn-d", counter))
	must(s.PutConnection(ctx, oauth.Connection{ID: "conn-d", PairingID: "p1", ParentID: "conn-a", ExpiresAt: suiteNow.Add(life)}))
	checkTTL(t, client, life, s.connKey("conn-d"), s.scopeKey("conn-d"), s.scopeIn("conn-d"))
	must(s.PutScope(ctx, "conn-d", counter)) // changed later: it keeps its end
	checkTTL(t, client, life, s.scopeKey("conn-d"), s.scopeIn("conn-d"))
	checkTTL(t, client, oauth.ConnectionTTL, s.scopeKey("conn-a"), s.scopeIn("conn-a"))

	for deadline := time.Now().Add(10 * time.Second); client.Exists(ctx, s.connKey("conn-d"), s.scopeKey("conn-d"), s.scopeIn("conn-d")).Val() > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the derived connection's keys did not expire")
		}
	}
	for _, q := range []struct{ action, set string }{
		{"get", s.scopeSet(actionMember("counter", "get"))},
		{"", s.scopeSet(toolMember("counter"))},
	} {
		holders, err := s.ScopeHolders(ctx, "counter", protocol.ActionsGranting(q.action))
		must(err)
		if !slices.Equal(holders, []string{"conn-a"}) {
			t.Fatalf("holders of counter %q: %v, want conn-a alone", q.action, holders)
		}
		if client.SIsMember(ctx, q.set, "conn-d").Val() {
			t.Fatalf("%s still lists the ended connection", q.set)
		}
	}
	conns, err := s.ConnectionsOfPairing(ctx, "p1")
	must(err)
	if len(conns) != 1 || conns[0].ID != "conn-a" {
		t.Fatalf("connections %v, want conn-a alone", conns)
	}
	if client.SIsMember(ctx, s.pairingConns("p1"), "conn-d").Val() {
		t.Fatal("the pairing's set still lists the ended connection")
	}
}

// TestScopeWritesPruneTheIndex: the shared index sets do not keep the
// connections that ended when nobody asks who holds a tool: a scope write
// removes them from a sample of each set it adds to (all of a set as
// small as the sample).
func TestScopeWritesPruneTheIndex(t *testing.T) {
	client := startRedis(t)
	ctx := context.Background()
	s := aging{newStore(client)}
	counter := oauth.Scope{Entries: []protocol.ScopeEntry{{Tool: "counter", Actions: []string{"get"}}}}
	for i := range pruneSampleSize - 1 {
		id := fmt.Sprintf("conn-%d", i)
		if err := s.PutScope(ctx, id, counter); err != nil {
			t.Fatal(err)
		}
		if err := s.PutConnection(ctx, oauth.Connection{ID: id, PairingID: "p1", ExpiresAt: suiteNow.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.ExpireAsOf(ctx, suiteNow.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	set := s.scopeSet(actionMember("counter", "get"))
	if n := client.SCard(ctx, set).Val(); n != pruneSampleSize-1 {
		t.Fatalf("the index set holds %d entries before the write, want the %d ended ones", n, pruneSampleSize-1)
	}
	if err := s.PutScope(ctx, "conn-new", counter); err != nil {
		t.Fatal(err)
	}
	if got := client.SMembers(ctx, set).Val(); !slices.Equal(got, []string{"conn-new"}) {
		t.Fatalf("the index set after a write: %v, want conn-new alone", got)
	}
}

// TestIndexesFollowRecords looks at the keys themselves: the contract can
// not see an index entry left behind, since readers check the record.
func TestIndexesFollowRecords(t *testing.T) {
	client := startRedis(t)
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		do   func(s *Store)
		want []string // every key left under the prefix
	}{
		{"a replaced authorization code loses its entry", func(s *Store) {
			must(s.PutConnectRequest(ctx, oauth.ConnectRequest{ID: "r1", CodeHash: []byte("c"), ExpiresAt: suiteNow.Add(time.Minute)}))
			for _, code := range []string{"a1", "a2"} {
				_, err := s.UpdateConnectRequest(ctx, "r1", func(r *oauth.ConnectRequest) error {
					r.AuthCodeHash, r.AuthCodeExpiresAt = []byte(code), suiteNow.Add(oauth.AuthCodeTTL)
					return nil
				})
				must(err)
			}
		}, []string{"{req}:auth:6132", "{req}:code:63", "{req}:rec:r1"}},
		{"a request written past its end is deleted with its entries", func(s *Store) {
			must(s.PutConnectRequest(ctx, oauth.ConnectRequest{ID: "r1", CodeHash: []byte("c"), ExpiresAt: suiteNow}))
			_, err := s.UpdateConnectRequest(ctx, "r1", func(r *oauth.ConnectRequest) error {
				r.ExpiresAt, r.AuthCodeHash = suiteNow.Add(-time.Hour), []byte("a")
				return nil
			})
			must(err)
		}, nil},
		{"a dropped refresh hash loses its entry", func(s *Store) {
			must(s.PutFamily(ctx, oauth.Family{ID: "f1", ConnectionID: "c1", LastUsed: suiteNow,
				AbsoluteExpiry: suiteNow.Add(time.Hour), Current: []byte("t0"), Previous: []byte("p0")}))
			_, err := s.UpdateFamily(ctx, "f1", func(f *oauth.Family) error {
				f.Previous, f.Current = nil, []byte("t1")
				return nil
			})
			must(err)
		}, []string{"{fam}:of:c1", "{fam}:rec:f1", "{fam}:refresh:7431"}},
		{"a family updated past its end is deleted with its entries", func(s *Store) {
			must(s.PutFamily(ctx, oauth.Family{ID: "f1", ConnectionID: "c1", LastUsed: suiteNow,
				AbsoluteExpiry: suiteNow.Add(time.Hour), Current: []byte("t0"), Superseded: [][]byte{[]byte("s0")}}))
			_, err := s.UpdateFamily(ctx, "f1", func(f *oauth.Family) error {
				f.AbsoluteExpiry = suiteNow.Add(-time.Second)
				return nil
			})
			must(err)
		}, nil},
		{"an expired access token is not stored", func(s *Store) {
			must(s.PutAccessToken(ctx, oauth.AccessToken{Hash: []byte("a"), ExpiresAt: suiteNow}))
		}, nil},
		{"a cleared scope leaves no index entry", func(s *Store) {
			grant := oauth.Scope{Entries: []protocol.ScopeEntry{{Tool: "counter", Actions: []string{"get", "*"}}}}
			must(s.PutScope(ctx, "conn-a", grant))
			must(s.PutScope(ctx, "conn-b", grant))
			must(s.PutScope(ctx, "conn-a", oauth.Scope{}))
		}, []string{"{scope}:idx:counter\x00*", "{scope}:idx:counter\x00get", "{scope}:in:conn-b",
			"{scope}:rec:conn-a", "{scope}:rec:conn-b", "{scope}:tool:counter"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(client)
			tt.do(s)
			if got := keysOf(t, client, s.prefix); !slices.Equal(got, tt.want) {
				t.Fatalf("keys %q, want %q", got, tt.want)
			}
		})
	}
}

// keysOf lists the keys under prefix, without it, sorted.
func keysOf(t *testing.T, client goredis.UniversalClient, prefix string) []string {
	t.Helper()
	var out []string
	iter := client.Scan(context.Background(), 0, prefix+"*", 100).Iterator()
	for iter.Next(context.Background()) {
		out = append(out, strings.TrimPrefix(iter.Val(), prefix))
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestUpdateGivesUp: an update that loses every race returns ErrContended
// after maxAttempts tries, and does not write.
func TestUpdateGivesUp(t *testing.T) {
	client := startRedis(t)
	ctx := context.Background()
	s := newStore(client)
	if err := s.PutConnection(ctx, oauth.Connection{ID: "conn-a", PairingID: "p1", CreatedAt: suiteNow}); err != nil {
		t.Fatal(err)
	}
	tries := 0
	_, err := s.UpdateConnection(ctx, "conn-a", func(c *oauth.Connection) error {
		tries++
		// Another node writes between this read and the write.
		other := *c
		other.LastUsed = suiteNow.Add(time.Duration(tries) * time.Second)
		if err := s.put(ctx, s.connKey("conn-a"), other, 0); err != nil {
			return err
		}
		c.Revoked = true
		return nil
	})
	if !errors.Is(err, ErrContended) || tries != maxAttempts {
		t.Fatalf("after %d tries: %v, want ErrContended after %d", tries, err, maxAttempts)
	}
	c, err := s.Connection(ctx, "conn-a")
	if err != nil || c.Revoked {
		t.Fatalf("the lost update was written: %+v, %v", c, err)
	}
}

func TestNewRefusesBracesInPrefix(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("New accepted a prefix with a hash tag")
		}
	}()
	New(nil, "relay{a}:")
}

// startRedis starts a redis-server of the test's own on a free loopback
// port, without persistence, and stops it when the test ends.
func startRedis(t *testing.T) goredis.UniversalClient {
	t.Helper()
	return redistest.Start(t).Client()
}
