package redis

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tabrelay/tabrelay/internal/redistest"
)

func TestAtLeast(t *testing.T) {
	for _, c := range []struct {
		version string
		want    bool
	}{
		{"7.0.0", true}, {"7.0.15", true}, {"7.2.4", true}, {"8.0.1", true}, {"7.10.0", true}, {"7.0", true},
		{"6.2.14", false}, {"6.9.99", false}, {"5.0.7", false}, {"", false}, {"seven", false}, {"7.x.1", false},
	} {
		if got := atLeast(c.version, MinVersion); got != c.want {
			t.Errorf("atLeast(%q, %q) = %v, want %v", c.version, MinVersion, got, c.want)
		}
	}
}

// TestCheckVersionOfARealServer: the Redis the tests run (Debian's, 7.0
// or later) passes, and says its version and run id.
func TestCheckVersionOfARealServer(t *testing.T) {
	client := redistest.Start(t).Client()
	ctx := context.Background()
	if err := CheckVersion(ctx, client); err != nil {
		t.Fatal(err)
	}
	s, err := ReadServer(ctx, client)
	if err != nil || s.Version == "" || s.RunID == "" {
		t.Fatalf("ReadServer = %+v, %v; want a version and a run id", s, err)
	}
}

// TestCheckVersionWaitsForAnAnswer: a Redis that does not answer is asked
// until the start-up's time ends, then the error says what was asked.
func TestCheckVersionWaitsForAnAnswer(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client()
	srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	err := CheckVersion(ctx, client)
	if err == nil || !strings.Contains(err.Error(), "read the server's version") {
		t.Fatalf("CheckVersion of a stopped Redis = %v; want the read's error", err)
	}
}

// TestCheckVersionOfAServerThatRefusesINFO: an ACL without INFO is said at
// once, as a version unknown (the node warns and runs), not waited on as
// an unreachable Redis.
func TestCheckVersionOfAServerThatRefusesINFO(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	if err := srv.Client().Do(ctx, "ACL", "SETUSER", "relay", "on", ">pw", "~*", "&*", "+@all", "-info").Err(); err != nil {
		t.Fatal(err)
	}
	client := goredis.NewClient(&goredis.Options{Addr: srv.Addr(), Username: "relay", Password: "pw"})
	defer client.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := CheckVersion(ctx, client)
	if !errors.Is(err, ErrVersionUnknown) || !strings.Contains(err.Error(), "refused INFO server") || ctx.Err() != nil {
		t.Fatalf("CheckVersion without INFO = %v (start-up time left: %v); want the refusal at once", err, ctx.Err() == nil)
	}
}
