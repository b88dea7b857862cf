package oauth_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tabrelay/tabrelay/internal/clock"
	"github.com/tabrelay/tabrelay/internal/redistest"
	"github.com/tabrelay/tabrelay/oauth"
	"github.com/tabrelay/tabrelay/protocol"
	redisstore "github.com/tabrelay/tabrelay/store/redis"
)

// roundTrips counts what a go-redis client sends and waits for: a
// command, or a pipeline (one round trip however many commands it holds;
// a cluster client's pipeline goes to each master it needs at once). A
// new connection's own start (HELLO, CLIENT SETINFO…) is not counted.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (r *roundTrips) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if !connectionStart(cmd) {
			r.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (r *roundTrips) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		if len(cmds) > 0 && !connectionStart(cmds[0]) {
			r.n.Add(1)
		}
		return next(ctx, cmds)
	}
}

func connectionStart(cmd goredis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "auth", "client", "select", "readonly":
		return true
	}
	return false
}

var redisPrefixes atomic.Int64

// redisHarness is a harness whose server keeps its records in Redis
// through client, under a prefix of its own, with the hashing key and
// fake clock given (Redis expires keys by the real clock: the fake one
// starts now).
func redisHarness(tb testing.TB, client goredis.UniversalClient, prefix string, key []byte, clk *clock.Fake,
	edit ...func(*oauth.Config)) *harness {
	return newHarness(tb, append([]func(*oauth.Config){func(c *oauth.Config) {
		c.Store = redisstore.New(client, prefix)
		c.Hasher = oauth.NewHasher(key)
		c.Clock = clk
	}}, edit...)...)
}

// derive exchanges subject for a sub-agent's token (RFC 8693), narrowed
// to scope when it is not "".
func (h *harness) derive(clientID, subject, scope string) string {
	h.tb.Helper()
	form := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:token-exchange"}, "client_id": {clientID},
		"subject_token": {subject}, "subject_token_type": {"urn:ietf:params:oauth:token-type:access_token"}}
	if scope != "" {
		form.Set("scope", scope)
	}
	resp, body := h.postForm("/token", form)
	var out struct {
		AccessToken string `json:"access_token"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &out) != nil || out.AccessToken == "" {
		h.tb.Fatalf("token exchange: %d %s", resp.StatusCode, body)
	}
	return out.AccessToken
}

// TestACheckOnRedisIsOneRoundTrip (issue 13 item 1): a cold bearer check
// on one Redis (or Sentinel's master) reads the token, its family, its
// connection's chain and their scope records in one round trip, for a
// derived connection as for a direct one, and answers as the walk of the
// records does: the connection's resolved scope, or a 401 for a token
// unknown, expired, revoked, for another resource or whose ancestor was
// forgotten. On Redis Cluster, whose slots a script's keys may not span,
// the check reads the token, then the rest in one pipeline per
// connection of the chain.
func TestACheckOnRedisIsOneRoundTrip(t *testing.T) {
	t.Run("one Redis", func(t *testing.T) {
		client := redistest.Start(t).Client()
		checkOnRedis(t, client, 1, 1)
	})
	t.Run("Redis Cluster", func(t *testing.T) {
		client := redistest.StartCluster(t, 3, 0).Client()
		checkOnRedis(t, client, 2, 3)
	})
}

func checkOnRedis(t *testing.T, client goredis.UniversalClient, direct, derived int64) {
	ctx := context.Background()
	counted := &roundTrips{}
	client.AddHook(counted)
	key := make([]byte, 32)
	rand.Read(key)
	prefix := fmt.Sprintf("check%d:", redisPrefixes.Add(1))
	clk := clock.NewFake(time.Now())
	h := redisHarness(t, client, prefix, key, clk)
	clientID := h.register("Checked", testCB)

	// cold checks a token no check has read yet, counting its round trips.
	cold := func(token string) (protocol.Grant, error, int64) {
		before := counted.n.Load()
		g, err := h.as.Verify(ctx, token)
		return g, err, counted.n.Load() - before
	}
	// The first script a Redis runs is loaded first (EVALSHA answers
	// NOSCRIPT, EVAL follows): once per server, not per check.
	if _, err := h.as.Verify(ctx, "tra_never-issued"); !errors.Is(err, oauth.ErrInvalidToken) {
		t.Fatalf("a token never issued: %v", err)
	}

	parent := h.connect(clientID)
	g, err, n := cold(parent.AccessToken)
	if err != nil || g.ConnectionID == "" || g.PairingID == "" {
		t.Fatalf("a direct connection's token: %+v %v", g, err)
	}
	if n != direct {
		t.Errorf("a cold check of a direct connection's token took %d round trips, want %d", n, direct)
	}
	if _, err := h.as.WriteScope(ctx, g.ConnectionID, []protocol.ScopeEntry{
		{Tool: "echo", Actions: []string{"*"}}, {Tool: "whoami", Actions: []string{"*"}}}, false, "tab"); err != nil {
		t.Fatal(err)
	}
	child := h.derive(clientID, parent.AccessToken, "echo:*")
	c, err, n := cold(child)
	if err != nil || c.ConnectionID == g.ConnectionID || c.PairingID != g.PairingID || len(c.Scope) != 1 || c.Scope[0].Tool != "echo" {
		t.Fatalf("a derived connection's token: %+v %v, want the parent's scope narrowed to echo", c, err)
	}
	if n != derived {
		t.Errorf("a cold check of a derived connection's token took %d round trips, want %d", n, derived)
	}
	grandchild := h.derive(clientID, child, "")
	if c, err := h.as.Verify(ctx, grandchild); err != nil || len(c.Scope) != 1 || c.Scope[0].Tool != "echo" {
		t.Fatalf("a token derived twice: %+v %v, want its parent's scope", c, err)
	}

	refused := func(what, token string) {
		t.Helper()
		if _, err := h.as.Verify(ctx, token); !errors.Is(err, oauth.ErrInvalidToken) {
			t.Errorf("%s: %v, want an invalid token", what, err)
		}
	}
	refused("a token never issued", "tra_"+strings.Repeat("x", 43))
	other := redisHarness(t, client, prefix, key, clk) // another issuer: another resource
	if _, err := other.as.Verify(ctx, parent.AccessToken); !errors.Is(err, oauth.ErrInvalidToken) {
		t.Errorf("a token for another resource: %v, want an invalid token", err)
	}

	// The person forgets the parent: its children end with it.
	if err := h.as.Forget(ctx, g.PairingID, g.ConnectionID); err != nil {
		t.Fatal(err)
	}
	refused("a token of a forgotten connection", parent.AccessToken)
	refused("a token whose parent was forgotten", child)
	refused("a token whose grandparent was forgotten", grandchild)

	revoked := h.connect(clientID)
	if _, err := h.as.Verify(ctx, revoked.AccessToken); err != nil {
		t.Fatal(err)
	}
	if resp, body := h.postForm("/revoke", url.Values{"token": {revoked.RefreshToken}, "client_id": {clientID}}); resp.StatusCode != 200 {
		t.Fatalf("revoke: %d %s", resp.StatusCode, body)
	}
	refused("a token of a revoked family", revoked.AccessToken)

	expired := h.connect(clientID)
	clk.Advance(oauth.AccessTokenTTL + time.Second)
	refused("an expired token", expired.AccessToken)
}

// TestACheckOnRedisThatFailsSaysSo: a check whose read Redis refuses, or
// cannot answer, is an error (the front end's 503), never an invalid
// token (a 401 that would send the host to connect again).
func TestACheckOnRedisThatFailsSaysSo(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	admin := srv.Client()
	// A user that may read keys but not run scripts: Redis refuses the
	// check's script (NOPERM) as it would a GET of a key it may not read.
	if err := admin.Do(ctx, "ACL", "SETUSER", "noscripts", "on", ">pw", "~*", "&*", "+@all", "-@scripting").Err(); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	rand.Read(key)
	clk := clock.NewFake(time.Now())
	h := redisHarness(t, admin, "fails:", key, clk)
	tok := h.connect(h.register("Failing", testCB))
	g, err := h.as.Verify(ctx, tok.AccessToken)
	if err != nil {
		t.Fatal(err)
	}

	limited := goredis.NewClient(&goredis.Options{Addr: srv.Addr(), Username: "noscripts", Password: "pw"})
	t.Cleanup(func() { limited.Close() })
	refusedScripts := redisHarness(t, limited, "fails:", key, clk, func(c *oauth.Config) { c.Issuer = h.srv.URL })
	_, err = refusedScripts.as.Verify(ctx, tok.AccessToken)
	if err == nil || errors.Is(err, oauth.ErrInvalidToken) || !strings.HasPrefix(err.Error(), "redis store: read access token: ") {
		t.Errorf("a check whose script Redis refused: %v, want the store's read error", err)
	}

	srv.Stop()
	h.as.DropVerified(g.PairingID)
	_, err = h.as.Verify(ctx, tok.AccessToken)
	if err == nil || errors.Is(err, oauth.ErrInvalidToken) || !strings.HasPrefix(err.Error(), "redis store: read access token: ") {
		t.Errorf("a check while Redis is stopped: %v, want the store's read error", err)
	}
}

// BenchmarkVerifyColdOnRedis is a bearer check that reads Redis every
// time (each op drops the checks kept for the browser first, as any of
// its events does): a direct connection's token, and a derived one's.
// cpu-us/op is this process's CPU (the relay's side), redis-cpu-us/op
// the Redis server's (INFO cpu).
func BenchmarkVerifyColdOnRedis(b *testing.B) {
	ctx := context.Background()
	client := redistest.Start(b).Client()
	key := make([]byte, 32)
	rand.Read(key)
	h := redisHarness(b, client, "bench:", key, clock.NewFake(time.Now()))
	clientID := h.register("Bench Client", testCB)
	parent := h.connect(clientID).AccessToken
	for _, tc := range []struct{ name, token string }{
		{"direct", parent},
		{"derived", h.derive(clientID, parent, "")},
	} {
		b.Run(tc.name, func(b *testing.B) {
			g, err := h.as.Verify(ctx, tc.token)
			if err != nil {
				b.Fatal(err)
			}
			self0, redis0 := selfCPU(), redisCPU(b, client)
			for b.Loop() {
				h.as.DropVerified(g.PairingID)
				if _, err := h.as.Verify(ctx, tc.token); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(selfCPU()-self0)/1e3/float64(b.N), "cpu-us/op")
			b.ReportMetric(float64(redisCPU(b, client)-redis0)/1e3/float64(b.N), "redis-cpu-us/op")
		})
	}
}

// selfCPU is this process's user+system CPU.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// redisCPU is the Redis server's user+system CPU (INFO cpu).
func redisCPU(b *testing.B, client *goredis.Client) time.Duration {
	info, err := client.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	for _, line := range strings.Split(info, "\r\n") {
		for _, f := range []string{"used_cpu_sys:", "used_cpu_user:"} {
			if v, ok := strings.CutPrefix(line, f); ok {
				secs, _ := strconv.ParseFloat(v, 64)
				total += time.Duration(secs * float64(time.Second))
			}
		}
	}
	return total
}
