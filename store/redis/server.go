package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// MinVersion is the oldest Redis the store runs on: a hello's pairing is
// found or made with SET NX GET (batch.go), which Redis refuses before
// 7.0, and a bearer check's script declares its flags (check.go), which a
// Redis before 7.0 cannot compile. Either would fail at the first hello or
// call; CheckVersion fails at the start instead.
const MinVersion = "7.0.0"

// Server is what a Redis server says of itself in INFO server.
type Server struct {
	Version string // redis_version (Valkey reports its Redis compatibility here)
	RunID   string // run_id, which changes when the server restarts
}

// ReadServer reads INFO server of the server c talks to.
func ReadServer(ctx context.Context, c goredis.Cmdable) (Server, error) {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return Server{}, err
	}
	var s Server
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "redis_version:"); ok {
			s.Version = v
		} else if v, ok := strings.CutPrefix(line, "run_id:"); ok {
			s.RunID = v
		}
	}
	return s, nil
}

// CheckVersion fails when the Redis of client (every master of a Redis
// Cluster) is older than MinVersion, or answers ErrVersionUnknown when it
// refuses to say. A Redis that does not answer is asked again until ctx
// ends, as joining the cluster waits for it too.
func CheckVersion(ctx context.Context, client goredis.UniversalClient) error {
	for {
		err := checkVersion(ctx, client)
		if !errors.Is(err, errUnreachable) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// errUnreachable marks the one failure asking again may mend: no answer.
var errUnreachable = errors.New("is Redis reachable?")

// ErrVersionUnknown is CheckVersion's answer when the server refuses INFO
// (an ACL without it, a renamed command): its version cannot be known,
// which is no reason not to run on it.
var ErrVersionUnknown = errors.New("redis store: the server's version is unknown")

func checkVersion(ctx context.Context, client goredis.UniversalClient) error {
	check := func(ctx context.Context, c goredis.Cmdable) error {
		s, err := ReadServer(ctx, c)
		var refused goredis.Error
		switch {
		case errors.As(err, &refused):
			return fmt.Errorf("%w: it refused INFO server: %v", ErrVersionUnknown, err)
		case err != nil:
			return fmt.Errorf("redis store: read the server's version (%w): %w", errUnreachable, err)
		case !atLeast(s.Version, MinVersion):
			return fmt.Errorf("redis store: Redis %s or later is needed; the server says it is %q", MinVersion, s.Version)
		}
		return nil
	}
	if cc, ok := client.(*goredis.ClusterClient); ok {
		// Each master; a master not answering is asked again with all
		// of them, and one too old ends the start wherever it stands.
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error { return check(ctx, c) })
	}
	return check(ctx, client)
}

// atLeast compares dotted versions number by number ("7.10" is after
// "7.9"); a version that does not parse is never at least anything.
func atLeast(version, min string) bool {
	v, m := strings.Split(version, "."), strings.Split(min, ".")
	for i := range m {
		want, _ := strconv.Atoi(m[i])
		if i >= len(v) {
			return want == 0
		}
		got, err := strconv.Atoi(v[i])
		if err != nil {
			return false
		}
		if got != want {
			return got > want
		}
	}
	return true
}
