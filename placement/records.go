package placement

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	goredis "github.com/redis/go-redis/v9"
)

// The activation records: one per pairing, "<member> <address> <actor
// id>", or a "moved <member>" mark that expires; the scripts that swap,
// release and mark them atomically, and the check that compares them with
// the actors active here.

// record is the activation record naming member's actor pid; parseRecord
// reads it back.
func record(member string, pid *actor.PID) string {
	return member + " " + pid.Address + " " + pid.Id
}

func parseRecord(rec string) (member string, pid *actor.PID, ok bool) {
	parts := strings.SplitN(rec, " ", 3)
	if len(parts) != 3 {
		return "", nil, false
	}
	return parts[0], actor.NewPID(parts[1], parts[2]), true
}

// claimScript swaps a pairing's record in when it still is what the
// caller read ("" for none): {1, new} when swapped, {0, current} when not.
// The pairing moves from the previous owner's set to this member's.
// KEYS: record, this member's set, the previous owner's set. ARGV:
// expected, new, pairing id.
var claimScript = goredis.NewScript(`
local cur = redis.call('GET', KEYS[1]) or ''
if cur ~= ARGV[1] then return {0, cur} end
redis.call('SET', KEYS[1], ARGV[2])
if KEYS[3] ~= KEYS[2] then redis.call('SREM', KEYS[3], ARGV[3]) end
redis.call('SADD', KEYS[2], ARGV[3])
return {1, ARGV[2]}
`)

// releaseScript deletes a record that still names the stopped actor, or
// replaces it with a mark that expires. KEYS: record, the member's set.
// ARGV: value, pairing id, mark ("" to delete), mark's life in ms.
var releaseScript = goredis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  if ARGV[3] == '' then
    redis.call('DEL', KEYS[1])
  else
    redis.call('SET', KEYS[1], ARGV[3], 'PX', tonumber(ARGV[4]))
  end
  redis.call('SREM', KEYS[2], ARGV[2])
  return 1
end
return 0
`)

// movedMark starts the mark a record leaves when its actor handed off or
// its member left: "moved <member>".
const movedMark = "moved "

// movedLife is how long a mark lasts: far longer than tabs take to come
// back, short enough not to pile up.
const movedLife = 10 * time.Minute

// replaceReason says why a record is replaced, for the log.
func replaceReason(rec, member string, parsed bool, self string, stale bool) string {
	switch {
	case strings.HasPrefix(rec, movedMark):
		return "moved (its node drained or left)"
	case !parsed:
		return "unreadable"
	case member == self:
		return "its actor here stopped"
	case stale:
		return "the caller found its actor gone"
	}
	return "its member left"
}

// recordNames reports whether the pairing's record names this member's
// actor pid. It reads on time of its own: the ask's may be up.
func (l *Lookup) recordNames(id string, pid *actor.PID) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	rec, err := l.client.Get(ctx, l.keys.record(id)).Result()
	return err == nil && rec == record(l.members.Self(), pid), err
}

// released deletes the record of a pairing actor of this node that
// stopped, if the record still names it. An actor that handed off (its
// node drains) leaves a "moved" mark instead, for movedLife: the next
// activation knows the pairing's tabs are on their way back.
func (l *Lookup) released(id string, pid *actor.PID, handedOff bool) {
	value := record(l.members.Self(), pid)
	mark := ""
	if handedOff {
		mark = movedMark + l.members.Self()
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		err := releaseScript.Run(ctx, l.client, []string{l.keys.record(id), l.keys.of(l.members.Self())}, value, id, mark, movedLife.Milliseconds()).Err()
		if err != nil {
			// The record stays; whoever finds it next finds its actor
			// gone and replaces it.
			l.metrics.RedisErrors.Inc()
		}
	}()
}

// Check is placement's side of /debug/check: every pairing active here
// should be named by its record, and every record naming this member
// should name an active actor.
type Check struct {
	Active            int   `json:"active"`            // pairing actors active here
	Recorded          int   `json:"recorded"`          // of them, named by their record
	RecordedElsewhere int   `json:"recordedElsewhere"` // active here, but the record names another actor
	Unrecorded        int   `json:"unrecorded"`        // active here, no record at all
	RecordsHere       int64 `json:"recordsHere"`       // records this member's set holds
}

// Check compares the pairings active here with their records.
func (l *Lookup) Check(ctx context.Context) (Check, error) {
	var c Check
	ids, pids := []string{}, []*actor.PID{}
	l.acts.Each(func(id string, pid *actor.PID) { ids, pids = append(ids, id), append(pids, pid) })
	c.Active = len(ids)
	pipe := l.client.Pipeline()
	gets := make([]*goredis.StringCmd, len(ids))
	for i, id := range ids {
		gets[i] = pipe.Get(ctx, l.keys.record(id))
	}
	card := pipe.SCard(ctx, l.keys.of(l.members.Self()))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
		return c, err
	}
	for i, g := range gets {
		rec, err := g.Result()
		if err != nil {
			c.Unrecorded++
			continue
		}
		member, pid, ok := parseRecord(rec)
		if ok && member == l.members.Self() && pid.Id == pids[i].Id {
			c.Recorded++
		} else {
			c.RecordedElsewhere++
		}
	}
	c.RecordsHere = card.Val()
	return c, nil
}
