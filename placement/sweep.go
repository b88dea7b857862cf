package placement

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Sweeping: the records of members that left are marked moved (purge),
// at once when the member list says so, and every sweepEvery for members
// that died while no node up now listed them.

// membersChanged purges the records of members that left (Members' changed).
func (l *Lookup) membersChanged(ids []string) {
	l.mu.Lock()
	prev := l.last
	l.last = ids
	for id, at := range l.seen {
		if !slices.Contains(ids, at.member) {
			delete(l.seen, id)
		}
	}
	l.mu.Unlock()
	for _, id := range prev {
		if !slices.Contains(ids, id) {
			go l.purge(id)
		}
	}
	l.mu.Lock()
	due := time.Since(l.lastSweep) >= sweepEvery
	if due {
		l.lastSweep = time.Now()
	}
	l.mu.Unlock()
	if due {
		go l.sweep()
	}
}

// sweepEvery is how often a node looks for record sets nobody purged.
const sweepEvery = 10 * time.Minute

// sweep purges the record sets of members that hold no lease at all and
// that nobody purged: members that died while no node up now listed them
// (every node restarted at once), and purges that failed. A member with a
// lease entry, even an expired one, is left to the removal that follows.
func (l *Lookup) sweep() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prefix := l.keys.of("")
	var scanner goredis.Cmdable = l.client
	if cc, ok := l.client.(*goredis.ClusterClient); ok {
		// A cluster client's SCAN asks whichever node it picks; every
		// {placement} key lives in one slot: ask its master.
		m, err := cc.MasterForKey(ctx, prefix)
		if err != nil {
			l.metrics.RedisErrors.Inc()
			l.log.Warn("placement: looking for records nobody purged failed; trying again later", "err", err)
			return
		}
		scanner = m
	}
	iter := scanner.Scan(ctx, 0, globEscape(prefix)+"*", 500).Iterator()
	for iter.Next(ctx) {
		member := strings.TrimPrefix(iter.Val(), prefix)
		if member == l.members.Self() || l.members.Alive(member) {
			continue
		}
		if err := l.client.ZScore(ctx, l.keys.members(), member).Err(); errors.Is(err, goredis.Nil) {
			l.purge(member)
		}
	}
	if err := iter.Err(); err != nil {
		l.metrics.RedisErrors.Inc()
		l.log.Warn("placement: looking for records nobody purged failed; trying again later", "err", err)
	}
}

// globEscape quotes the characters SCAN's MATCH pattern gives a meaning.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// purge deletes the records that still name member, in batches.
func (l *Lookup) purge(member string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	total := 0
	for {
		n, err := purgeScript.Run(ctx, l.client, []string{l.keys.of(member)}, member, l.keys.record(""), 500,
			movedMark+member, movedLife.Milliseconds()).Int()
		if err != nil {
			l.metrics.RedisErrors.Inc()
			l.log.Warn("placement: purging a left member's records failed; they are replaced when found", "member", member, "err", err)
			return
		}
		total += n
		if n == 0 {
			break
		}
	}
	if total > 0 {
		l.log.Info("placement: records of a member that left purged", "member", member, "records", total)
	}
}

// purgeScript takes up to ARGV[3] pairing ids off a left member's set and
// marks their records moved when they still name it (the next activation
// then knows the tabs are coming back). Every key is under the {placement}
// tag (one slot). KEYS: the member's set. ARGV: member, record key prefix,
// batch, mark, mark's life in ms.
var purgeScript = goredis.NewScript(`
local ids = redis.call('SPOP', KEYS[1], tonumber(ARGV[3]))
local owner = ARGV[1] .. ' '
for _, id in ipairs(ids) do
  local key = ARGV[2] .. id
  local cur = redis.call('GET', key)
  if cur and string.sub(cur, 1, #owner) == owner then
    redis.call('SET', key, ARGV[4], 'PX', tonumber(ARGV[5]))
  end
end
return #ids
`)
