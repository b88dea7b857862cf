package redis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tabrelay/tabrelay/internal/redistest"
	"github.com/tabrelay/tabrelay/internal/testwait"
	"github.com/tabrelay/tabrelay/oauth"
	"github.com/tabrelay/tabrelay/protocol"
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

// TestACheckReadsTheRestInOnePipeline: what a bearer check needs beside
// the token (the family, the connection, its own scope) comes in one
// pipeline, and reads as the one-by-one reads do.
func TestACheckReadsTheRestInOnePipeline(t *testing.T) {
	client := redistest.Start(t).Client()
	counted := &pipelines{}
	client.AddHook(counted)
	ctx := context.Background()
	s := newStore(client)
	fam := oauth.Family{ID: "f1", ConnectionID: "conn-a", PairingID: "p1", CreatedAt: suiteNow, LastUsed: suiteNow,
		AbsoluteExpiry: suiteNow.Add(time.Hour)}
	scope := oauth.Scope{Entries: []protocol.ScopeEntry{{Tool: "counter", Actions: []string{"get"}}}}
	for _, err := range []error{
		s.PutConnection(ctx, oauth.Connection{ID: "conn-a", PairingID: "p1", CreatedAt: suiteNow}),
		s.PutConnection(ctx, oauth.Connection{ID: "conn-b", PairingID: "p1", CreatedAt: suiteNow}),
		s.PutScope(ctx, "conn-a", scope), s.PutFamily(ctx, fam),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	before, _ := counted.counts()
	r, err := s.CheckRecords(ctx, "f1", "conn-a")
	if err != nil || r.Family.ID != "f1" || r.Connection.ID != "conn-a" {
		t.Fatalf("read %+v, %v", r, err)
	}
	if want, _ := s.ScopeRecord(ctx, "conn-a"); string(r.Scope) != string(want) {
		t.Fatalf("scope %s, want %s", r.Scope, want)
	}
	if r, err := s.CheckRecords(ctx, "", "conn-b"); err != nil || r.Family.ID != "" || r.Scope != nil {
		t.Fatalf("a connection without a scope, no family asked: %+v, %v", r, err)
	}
	if _, err := s.CheckRecords(ctx, "f1", "conn-gone"); !errors.Is(err, oauth.ErrNotFound) {
		t.Fatalf("a connection not held: %v, want not found", err)
	}
	if _, err := s.CheckRecords(ctx, "f-gone", "conn-a"); !errors.Is(err, oauth.ErrNotFound) {
		t.Fatalf("a family not held: %v, want not found", err)
	}
	if after, _ := counted.counts(); after-before != 4 {
		t.Fatalf("4 checks sent %d pipelines of GETs, want one each", after-before)
	}
}
