package redis

import (
	"context"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tabrelay/tabrelay/internal/limit"
)

// attemptScript is one attempt on a bucket, kept as the time it is full
// again (GCRA's theoretical arrival time, unix ms): atomic in Redis, so
// nodes racing on one bucket (the relay-wide wrong-code limit, under a
// guessing attack) neither retry nor count one attempt twice. The key
// lives until the bucket is full again.
//
// KEYS: the bucket. ARGV: now (unix ms), every (ms), burst, 1 to take an
// attempt or 0 to look. It answers 0 when the attempt is (would be)
// within the rate, else the milliseconds until the bucket has one.
var attemptScript = goredis.NewScript(`
local now, every, burst = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local full = tonumber(redis.call('GET', KEYS[1]) or '0')
if full < now then full = now end
local after = full + every
if after - now > burst * every then return after - now - burst * every end
if ARGV[4] == '1' then redis.call('SET', KEYS[1], after, 'PX', after - now) end
return 0
`)

// TakeAttempt counts one attempt under key at now within rate (0), for
// every node sharing this Redis, or says how long until the bucket has one.
func (s *Store) TakeAttempt(ctx context.Context, key string, rate limit.Rate, now time.Time) (time.Duration, error) {
	return s.attempt(ctx, key, rate, now, 1)
}

// AttemptLeft answers as TakeAttempt, counting nothing.
func (s *Store) AttemptLeft(ctx context.Context, key string, rate limit.Rate, now time.Time) (time.Duration, error) {
	return s.attempt(ctx, key, rate, now, 0)
}

func (s *Store) attempt(ctx context.Context, key string, rate limit.Rate, now time.Time, take int) (time.Duration, error) {
	every := rate.Every.Milliseconds()
	if every < 1 || rate.Burst < 1 {
		return 0, fmt.Errorf("redis store: a rate of %d per %v", rate.Burst, rate.Every)
	}
	ms, err := attemptScript.Run(ctx, s.rdb, []string{s.plainKey("limit", key)}, now.UnixMilli(), every, rate.Burst, take).Int64()
	if err != nil {
		return 0, fmt.Errorf("redis store: attempt limit: %w", err)
	}
	return time.Duration(ms) * time.Millisecond, nil
}
