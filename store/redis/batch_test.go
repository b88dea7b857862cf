package redis

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tabrelay/tabrelay/internal/redistest"
	"github.com/tabrelay/tabrelay/internal/testwait"
)

// pipelines counts the pipelines of SETs and GETs a client sends and
// those commands, and holds them while hold is open.
type pipelines struct {
	mu       sync.Mutex
	sent     int
	commands int
	hold     chan struct{}
}

func (p *pipelines) DialHook(next goredis.DialHook) goredis.DialHook          { return next }
func (p *pipelines) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook { return next }
func (p *pipelines) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		sets := 0
		for _, c := range cmds {
			if c.Name() == "set" || c.Name() == "get" {
				sets++
			}
		}
		if sets == 0 {
			return next(ctx, cmds) // a connection's own start (HELLO…), a transaction's MULTI
		}
		p.mu.Lock()
		p.sent++
		p.commands += sets
		hold := p.hold
		p.mu.Unlock()
		if hold != nil {
			<-hold
		}
		return next(ctx, cmds)
	}
}

func (p *pipelines) counts() (sent, commands int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sent, p.commands
}

// TestHellosOfNewBrowsersShareRoundTrips: the pairings of hellos that come
// together are found or made in shared pipelines, one command each; the
// records are whole, and found again as they were made.
func TestHellosOfNewBrowsersShareRoundTrips(t *testing.T) {
	client := redistest.Start(t).Client()
	counted := &pipelines{hold: make(chan struct{})}
	client.AddHook(counted)
	s := New(client, "batch:")
	const hellos = 100
	now := time.Now().Truncate(time.Millisecond)
	var wg sync.WaitGroup
	errs := make(chan error, hellos)
	for i := range hellos {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := s.TouchPairing(context.Background(), fmt.Sprintf("p%d", i), []byte{byte(i)}, now)
			if err == nil && (p.ID != fmt.Sprintf("p%d", i) || !p.CreatedAt.Equal(now.UTC())) {
				err = fmt.Errorf("made %+v", p)
			}
			errs <- err
		}()
	}
	// The first pipelines are held: the other hellos queue behind them.
	testwait.Eventually(t, func() bool {
		_, inFlight := counted.counts()
		s.hellos.mu.Lock()
		queued := len(s.hellos.queue)
		s.hellos.mu.Unlock()
		return inFlight+queued == hellos
	}, "every hello sent or queued")
	close(counted.hold)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if sent, commands := counted.counts(); commands != hellos || sent > 2*maxTouchRunners {
		t.Fatalf("%d hellos took %d pipelines of %d commands in all; want one command each, in at most %d pipelines", hellos, sent, commands, 2*maxTouchRunners)
	}
	again, err := s.TouchPairing(context.Background(), "p7", []byte{7}, now.Add(time.Minute))
	if err != nil || !again.CreatedAt.Equal(now.UTC()) || len(again.SecretHash) != 1 || again.SecretHash[0] != 7 {
		t.Fatalf("p7 found again as %+v, %v; want it as it was made", again, err)
	}
}
