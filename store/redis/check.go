package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tabrelay/tabrelay/oauth"
)

// A cold bearer check (oauth.CheckReader, issue 13 item 1) reads the
// access token, its family, its connection's chain and their scope
// records. On one Redis, or Sentinel's master, checkScript reads them
// all in one round trip. On Redis Cluster it cannot: those keys are in
// four slots ({fam}, {conn}, {scope}, and the token's own), which a
// script may not span, so the check reads the token, then the family
// with the first connection and its scope in one pipeline (sent to each
// master it needs at once), then each ancestor with its scope in one
// more. One round trip there would take the ids in the token itself.

// checkScript reads a bearer check's records: KEYS are the access
// token's keys under each hashing key (current first), ARGV the key
// prefixes of families, connections and scope records, as Store.key
// makes them, and how many connections of the chain to read at most. It
// answers the keys it read, each followed by its value (nil: no such
// key); a record that does not decode ends the walk there, and the Go
// side reports it as a read of that record would.
//
// It reads keys it was not given in KEYS (the family, connections and
// scopes, whose ids are in the records it reads), which only a Redis
// that is not a Cluster allows: no-cluster says so, and the store runs
// it only on a client that is not a cluster client. no-writes lets it
// run where a write could not (a replica, a master out of memory).
var checkScript = goredis.NewScript(`#!lua flags=no-writes,no-cluster
local famPrefix, connPrefix, scopePrefix = ARGV[1], ARGV[2], ARGV[3]
local bound = tonumber(ARGV[4])
local out = {}
local function get(key)
  local v = redis.call('GET', key)
  out[#out + 1] = key
  out[#out + 1] = v
  return v
end
local function decode(raw)
  local ok, v = pcall(cjson.decode, raw)
  if ok and type(v) == 'table' then return v end
  return nil
end
local raw
for _, key in ipairs(KEYS) do
  raw = get(key)
  if raw then break end
end
local t = raw and decode(raw)
if not t then return out end
if type(t.familyId) == 'string' and t.familyId ~= '' then get(famPrefix .. t.familyId) end
local id = t.connectionId
for _ = 1, bound do
  if type(id) ~= 'string' or id == '' then break end
  raw = get(connPrefix .. id)
  get(scopePrefix .. id)
  local c = raw and decode(raw)
  if not c then break end
  id = c.parentId
end
return out
`)

var _ oauth.CheckReader = (*Store)(nil)

// ReadCheck reads ahead what a bearer check of the access token with
// hashes may read, up to connections connections of its chain: in one
// round trip (checkScript), or on Redis Cluster in one for the token and
// one per connection.
func (s *Store) ReadCheck(ctx context.Context, hashes [][]byte, connections int) (oauth.CheckRecords, error) {
	r := &readAhead{s: s, got: map[string][]byte{}}
	tokens := make([]string, len(hashes))
	for i, h := range hashes {
		tokens[i] = s.accessKey(h)
	}
	if s.cluster {
		return r, s.readCheckInPipelines(ctx, r, tokens, connections)
	}
	vals, err := checkScript.Run(ctx, s.rdb, tokens,
		s.familyKey(""), s.connKey(""), s.scopeKey(""), connections).Slice()
	if err != nil {
		return nil, fmt.Errorf("redis store: read access token: %w", err)
	}
	for i := 0; i+1 < len(vals); i += 2 {
		key, _ := vals[i].(string)
		raw, _ := vals[i+1].(string)
		if vals[i+1] == nil {
			r.got[key] = nil
		} else {
			r.got[key] = []byte(raw)
		}
	}
	return r, nil
}

// readCheckInPipelines is checkScript's walk on Redis Cluster.
func (s *Store) readCheckInPipelines(ctx context.Context, r *readAhead, tokens []string, connections int) error {
	var raw []byte
	for _, key := range tokens {
		if err := r.fetch(ctx, "access token", key); err != nil {
			return err
		}
		if raw = r.got[key]; raw != nil {
			break
		}
	}
	var t oauth.AccessToken
	if raw == nil || json.Unmarshal(raw, &t) != nil {
		return nil // the check finds no token, or one that does not decode
	}
	for id, i := t.ConnectionID, 0; id != "" && i < connections; i++ {
		keys := []string{s.connKey(id), s.scopeKey(id)}
		if i == 0 && t.FamilyID != "" {
			keys = append(keys, s.familyKey(t.FamilyID))
		}
		if err := r.fetch(ctx, "the records of an access token", keys...); err != nil {
			return err
		}
		var c oauth.Connection
		if r.got[keys[0]] == nil || json.Unmarshal(r.got[keys[0]], &c) != nil {
			return nil
		}
		id = c.ParentID
	}
	return nil
}

// readAhead is what ReadCheck read, by key (nil: no such key); what it
// did not read is read from the store.
type readAhead struct {
	s   *Store
	got map[string][]byte
}

// fetch GETs keys in one pipeline into got.
func (r *readAhead) fetch(ctx context.Context, what string, keys ...string) error {
	cmds := make([]*goredis.StringCmd, len(keys))
	_, _ = r.s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.Get(ctx, k)
		}
		return nil
	}) // each command holds its own answer
	for i, c := range cmds {
		raw, err := c.Bytes()
		switch {
		case errors.Is(err, goredis.Nil):
			r.got[keys[i]] = nil
		case err != nil:
			return fmt.Errorf("redis store: read %s: %w", what, err)
		default:
			r.got[keys[i]] = raw
		}
	}
	return nil
}

// Get answers a GET of key from what was read ahead (a key read ahead
// and not there as go-redis's Nil), and reads any other key: with it the
// check's reads are the Store's own (getter), on what was read ahead.
func (r *readAhead) Get(ctx context.Context, key string) *goredis.StringCmd {
	raw, ok := r.got[key]
	switch {
	case !ok:
		return r.s.rdb.Get(ctx, key)
	case raw == nil:
		return goredis.NewStringResult("", goredis.Nil)
	}
	return goredis.NewStringResult(string(raw), nil)
}

func (r *readAhead) AccessToken(ctx context.Context, h []byte) (oauth.AccessToken, error) {
	return r.s.accessToken(ctx, r, h)
}

func (r *readAhead) Family(ctx context.Context, id string) (oauth.Family, error) {
	return r.s.family(ctx, r, id)
}

func (r *readAhead) Connection(ctx context.Context, id string) (oauth.Connection, error) {
	return r.s.connection(ctx, r, id)
}

func (r *readAhead) ScopeRecord(ctx context.Context, connection string) ([]byte, error) {
	return r.s.scopeRecord(ctx, r, connection)
}
