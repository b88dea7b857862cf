// Package redis is the store shared by the nodes of a cluster (SPEC §7):
// the authorization server's records (oauth.Store) and the pairing records
// (pairing.Store) in one Redis, standalone or Redis Cluster,
// through a goredis.UniversalClient. It needs Redis 7.0 or newer (PEXPIRE
// NX/GT). It keeps only hashes of secrets, never a secret, and logs
// nothing. Placement and membership are not its business.
//
// # Key layout
//
// Every key starts with the store's prefix. Records that one transaction
// writes together with their index entries share one Redis Cluster hash
// tag, the name of their family, so that every MULTI/EXEC (and every
// multi-key read) stays in one slot:
//
//	{req}:rec:<id>                 connect request (JSON)             TTL
//	{req}:code:<hex code hash>     → request id                       TTL
//	{req}:auth:<hex auth hash>     → request id                       TTL
//	{conn}:rec:<id>                connection (JSON)                  TTL
//	{conn}:of:<pairing id>         SET of connection ids              TTL
//	{fam}:rec:<id>                 refresh family (JSON)              TTL
//	{fam}:refresh:<hex hash>       → family id                        TTL
//	{fam}:of:<connection id>       ZSET family id → its end (unix ms) TTL
//	{scope}:rec:<connection id>    scope record, as stored            TTL
//	{scope}:idx:<tool>\x00<action> SET of connection ids              TTL
//	{scope}:tool:<tool>            SET of connection ids (any action) TTL
//	{scope}:in:<connection id>     SET of the idx/tool keys naming it TTL
//
// Records that are only ever written alone carry no hash tag, so Redis
// Cluster spreads them over every shard by their whole key:
//
//	client:<id>                    client (JSON)                      TTL
//	at:<hex hash>                  access token (JSON)                TTL
//	pairing:<lookup id>            pairing (JSON)                     TTL
//	drained:<pairing id>           a drained browser's mark (JSON)    TTL
//	limit:<name>                   attempt bucket: when full (ms)     TTL
//
// The family-wide tag is a choice: a tag per record ({req:<id>}) would
// spread requests, families and connections too, but an index is looked up
// by a hash before the record's id is known, so its entries would live in
// other slots than their records and could not be written in the record's
// transaction. One tag per family keeps every record and its indexes in one
// MULTI, as the embedded store keeps them in one bbolt transaction, at the
// cost of serving each of those four families from one shard. They are
// small and their writes rare (an approval, a refresh, a scope change), and
// what every call reads of them is a single GET. The busiest records,
// access tokens (read on every call) and pairings (on every hello), spread.
//
// # Lifetimes
//
// Every key has a TTL (issue 15, defect 6): Redis expires what the
// embedded store sweeps, by the rules oauth/storetest's lifetimes test
// holds both stores to. Every write sets the TTL from the record's own
// end on the store's clock, on the record and its index entries alike: a
// connect request until max(ExpiresAt, AuthCodeExpiresAt) +
// oauth.AuthCodeTTL, an access token until ExpiresAt, a family until the
// earlier of its AbsoluteExpiry and LastUsed + oauth.FamilyIdleTTL, a
// client until its End (renewed by its tokens: TouchClient), a connection
// and its scope record until the connection's End, a pairing until
// pairing.IdleTTL after its last hello, a drained browser's mark until
// its Until, an attempt bucket until it is full again. A record whose end has passed is deleted by the write
// instead. A set shared by several records (a pairing's connections, the
// scope index) lives as long as its longest-lived member; entries whose
// record expired go when a read finds them, and each scope write checks a
// sample of the index sets it adds to (pruneSample). Records written by a
// build before these TTLs get theirs when next written.
package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tabrelay/tabrelay/pairing"
)

// Store is the Redis store. It holds no state of its own: any number of
// Stores on any number of nodes may share one Redis and prefix.
type Store struct {
	rdb     goredis.UniversalClient
	cluster bool // rdb is a Redis Cluster's client: no script spans slots
	prefix  string
	hellos  *touchBatch // the pairings of hellos, in pipelines (batch.go)
	// now is the clock TTLs are computed on: the wall clock but in tests
	// that run records dated by a fixed clock.
	now func() time.Time
}

var _ pairing.Store = (*Store)(nil)

// New returns a store keeping its keys under prefix in the Redis of
// client. It panics when prefix holds a brace: a hash tag in the prefix
// would change which keys share a slot.
func New(client goredis.UniversalClient, prefix string) *Store {
	if strings.ContainsAny(prefix, "{}") {
		panic(fmt.Sprintf("redis store: key prefix %q holds a brace", prefix))
	}
	_, cluster := client.(*goredis.ClusterClient)
	return &Store{rdb: client, cluster: cluster, prefix: prefix, now: time.Now, hellos: &touchBatch{rdb: client}}
}

// Hash-tagged key families (see the package doc).
const (
	famRequest    = "req"
	famConnection = "conn"
	famFamily     = "fam"
	famScope      = "scope"
)

// key names a key of a hash-tagged family.
func (s *Store) key(family, kind, id string) string {
	return s.prefix + "{" + family + "}:" + kind + ":" + id
}

// plainKey names a key of a record written alone.
func (s *Store) plainKey(kind, id string) string { return s.prefix + kind + ":" + id }

// ttl is what is left of a record that ends at end, rounded up to PX's
// millisecond; 0 when it has ended.
func (s *Store) ttl(end time.Time) time.Duration {
	d := end.Sub(s.now())
	if d <= 0 {
		return 0
	}
	return (d + time.Millisecond - 1).Truncate(time.Millisecond)
}

// ErrContended is what an update answers when other writers changed its
// record maxAttempts times in a row, between its read and its write.
var ErrContended = errors.New("redis store: the record kept changing under the update")

// maxAttempts bounds an optimistic update's tries. With the jittered pause
// between tries, 50 writers racing on one record (the storetest suite)
// finish well within it.
const maxAttempts = 64

// watch runs one optimistic transaction: read runs on a connection that
// WATCHes keys and returns what to write (nil: nothing), which is queued
// in MULTI/EXEC and applied only if no watched key changed since. A
// conflict runs read again, up to maxAttempts times; any other error,
// read's own included, is returned as is. keys and everything written
// must share one hash tag.
func (s *Store) watch(ctx context.Context, keys []string,
	read func(tx *goredis.Tx) (write func(goredis.Pipeliner), err error)) error {
	for attempt := range maxAttempts {
		err := s.rdb.Watch(ctx, func(tx *goredis.Tx) error {
			write, err := read(tx)
			if err != nil || write == nil {
				return err
			}
			_, err = tx.TxPipelined(ctx, func(p goredis.Pipeliner) error {
				write(p)
				return nil
			})
			return err
		}, keys...)
		if !errors.Is(err, goredis.TxFailedErr) {
			return err
		}
		if err := pause(ctx, attempt); err != nil {
			return err
		}
	}
	return ErrContended
}

// pause waits a random while, longer after each lost attempt, so that
// racing writers stop colliding.
func pause(ctx context.Context, attempt int) error {
	d := rand.N(time.Duration(min(attempt+1, 8)) * time.Millisecond)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// multi applies write in one MULTI/EXEC, watching nothing.
func (s *Store) multi(ctx context.Context, write func(goredis.Pipeliner)) error {
	_, err := s.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		write(p)
		return nil
	})
	return err
}

// getter is a client or a transaction's connection.
type getter interface {
	Get(ctx context.Context, key string) *goredis.StringCmd
}

// getJSON reads key into v; found is false when there is no such key.
// what names the record in an error (never its key: keys hold hashes).
func getJSON(ctx context.Context, c getter, key, what string, v any) (found bool, err error) {
	raw, err := c.Get(ctx, key).Bytes()
	return decodeJSON(raw, err, what, v)
}

// decodeJSON decodes into v what a GET answered (raw, err); found is
// false for a key that is not there.
func decodeJSON(raw []byte, err error, what string, v any) (found bool, _ error) {
	if errors.Is(err, goredis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("redis store: read %s: %w", what, err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, fmt.Errorf("redis store: %s does not decode: %w", what, err)
	}
	return true, nil
}

// TouchPairing returns the pairing's record, creating it when new, and
// records now as its last use: its TTL runs pairing.IdleTTL from there.
// One command finds or makes it, in a pipeline with the other hellos of
// the moment (batch.go); only the hourly renewal of a known pairing's last
// use is a transaction of its own.
func (s *Store) TouchPairing(ctx context.Context, id string, secretHash []byte, now time.Time) (pairing.Record, error) {
	key, what := s.plainKey("pairing", id), "pairing "+id
	renew := pairing.Touch(id, secretHash, now)
	end := func(p pairing.Record) time.Time { return p.LastSeen.Add(pairing.IdleTTL) }
	var fresh pairing.Record
	if _, err := renew(&fresh, false); err != nil {
		return pairing.Record{}, err
	}
	raw, err := json.Marshal(fresh)
	ttl := s.ttl(end(fresh))
	if err != nil || ttl == 0 {
		return touch(ctx, s, key, what, renew, end)
	}
	op := &touchOp{key: key, val: raw, ttl: ttl}
	if err := s.hellos.getOrCreate(ctx, op); err != nil {
		return pairing.Record{}, fmt.Errorf("redis store: find or make %s: %w", what, err)
	}
	if !op.found {
		return fresh, nil
	}
	var rec pairing.Record
	if err := json.Unmarshal(op.old, &rec); err != nil {
		return pairing.Record{}, fmt.Errorf("redis store: %s does not decode: %w", what, err)
	}
	if probe := rec; !mustWrite(renew, &probe) {
		return rec, nil
	}
	return touch(ctx, s, key, what, renew, end)
}

// mustWrite reports whether renew changes the record found.
func mustWrite(renew func(*pairing.Record, bool) (bool, error), rec *pairing.Record) bool {
	write, err := renew(rec, true)
	return err != nil || write
}

// touch applies renew to the record at key, written alone (found: whether
// it is there), and writes what renew made of it when renew says so, with
// a TTL until its end, in one optimistic transaction. A first read without
// the transaction lets a use that writes nothing cost one GET. An error
// from renew writes nothing and is returned.
func touch[T any](ctx context.Context, s *Store, key, what string, renew func(rec *T, found bool) (bool, error),
	end func(T) time.Time) (T, error) {
	var rec T
	found, err := getJSON(ctx, s.rdb, key, what, &rec)
	if err != nil {
		return rec, err
	}
	probe := rec
	if write, err := renew(&probe, found); err != nil || !write {
		return rec, err
	}
	err = s.watch(ctx, []string{key}, func(tx *goredis.Tx) (func(goredis.Pipeliner), error) {
		var zero T
		rec = zero
		found, err := getJSON(ctx, tx, key, what, &rec)
		if err != nil {
			return nil, err
		}
		if write, err := renew(&rec, found); err != nil || !write {
			return nil, err
		}
		ttl := s.ttl(end(rec))
		if ttl == 0 {
			return func(p goredis.Pipeliner) { p.Del(ctx, key) }, nil
		}
		return setJSON(ctx, key, rec, ttl)
	})
	return rec, err
}

// RekeyPairing moves a pairing's record from one lookup id to another
// (the signing key was rotated). The two keys are in other slots of a
// Redis Cluster, so the move is not one transaction: the new record is
// written only if none is there (a racing hello may have moved it), then
// the old one goes; whoever races ends with the one record at to.
func (s *Store) RekeyPairing(ctx context.Context, from string, fromHash []byte, to string, toHash []byte, now time.Time) (pairing.Record, bool, error) {
	var p pairing.Record
	fromKey, toKey := s.plainKey("pairing", from), s.plainKey("pairing", to)
	found, err := getJSON(ctx, s.rdb, fromKey, "pairing "+from, &p)
	if err != nil || !found {
		return pairing.Record{}, false, err
	}
	p, ok := pairing.Rekeyed(p, fromHash, toHash, now)
	if !ok {
		return pairing.Record{}, false, nil
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return pairing.Record{}, false, err
	}
	set, err := s.rdb.SetNX(ctx, toKey, raw, s.ttl(p.LastSeen.Add(pairing.IdleTTL))).Result()
	if err != nil {
		return pairing.Record{}, false, fmt.Errorf("redis store: re-key pairing %s: %w", p.ID, err)
	}
	if !set {
		if found, err = getJSON(ctx, s.rdb, toKey, "pairing "+to, &p); err != nil || !found {
			return pairing.Record{}, false, err
		}
	}
	if err := s.rdb.Del(ctx, fromKey).Err(); err != nil {
		return pairing.Record{}, false, fmt.Errorf("redis store: re-key pairing %s: %w", p.ID, err)
	}
	return p, true, nil
}

// HasPairing reports whether pairing id has a record.
// undoScript deletes KEYS[1] if it holds ARGV[1].
var undoScript = goredis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// UndoPairing deletes the record of pairing id if it is still p.
func (s *Store) UndoPairing(ctx context.Context, id string, p pairing.Record) error {
	raw, err := json.Marshal(p)
	if err == nil {
		err = undoScript.Run(ctx, s.rdb, []string{s.plainKey("pairing", id)}, raw).Err()
	}
	if err != nil {
		return fmt.Errorf("redis store: undo pairing %s: %w", id, err)
	}
	return nil
}

func (s *Store) HasPairing(ctx context.Context, id string) (bool, error) {
	n, err := s.rdb.Exists(ctx, s.plainKey("pairing", id)).Result()
	if err != nil {
		return false, fmt.Errorf("redis store: read pairing %s: %w", id, err)
	}
	return n == 1, nil
}

// setJSON returns the write of v at key with ttl (0: none).
func setJSON(ctx context.Context, key string, v any, ttl time.Duration) (func(goredis.Pipeliner), error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return func(p goredis.Pipeliner) { p.Set(ctx, key, raw, ttl) }, nil
}

// MarkDrained keeps each mark until its Until, in pipelines of
// markBatch (a draining node writes the marks of all its tabs' browsers
// at once; on a Redis Cluster the client splits a pipeline by slot). A
// mark whose Until has passed is not written.
func (s *Store) MarkDrained(ctx context.Context, marks map[string]pairing.Drained) error {
	ids := make([]string, 0, len(marks))
	for id := range marks {
		ids = append(ids, id)
	}
	for len(ids) > 0 {
		batch := ids[:min(markBatch, len(ids))]
		ids = ids[len(batch):]
		_, err := s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for _, id := range batch {
				if ttl := s.ttl(marks[id].Until); ttl > 0 {
					raw, _ := json.Marshal(marks[id]) // two times: always encodable
					p.Set(ctx, s.plainKey("drained", id), raw, ttl)
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("redis store: mark drained browsers: %w", err)
		}
	}
	return nil
}

// markBatch bounds one pipeline of MarkDrained, so that each is answered
// well within the client's read timeout.
const markBatch = 1000

// Drained returns the pairing's mark while its Until has not passed.
func (s *Store) Drained(ctx context.Context, id string, now time.Time) (pairing.Drained, bool, error) {
	var d pairing.Drained
	found, err := getJSON(ctx, s.rdb, s.plainKey("drained", id), "drained mark "+id, &d)
	if err != nil || !found || !now.Before(d.Until) {
		return pairing.Drained{}, false, err
	}
	return d, true, nil
}
