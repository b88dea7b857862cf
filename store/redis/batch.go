package redis

import (
	"context"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// A hello's pairing is found or made with one command, SET NX GET (the
// record a new pairing gets, set only if none is there, the one there
// returned), and the hellos that come together share round trips: what
// waits while the pipelines in flight run goes in one pipeline of its own
// (issue 13: a storm of tabs is one round trip per batch, as bbolt's Batch
// makes it one commit). A lone hello waits for nobody.

// Bounds of the pipelines of hellos.
const (
	maxTouchBatch      = 256 // commands in one pipeline
	maxTouchRunners    = 4   // pipelines in flight at once
	touchBatchPatience = 5 * time.Second
)

// touchBatch runs get-or-create commands in pipelines.
type touchBatch struct {
	rdb goredis.UniversalClient

	mu      sync.Mutex // guards the fields below
	queue   []*touchOp
	runners int
}

// touchOp is one get-or-create: set val at key with ttl unless the key is
// there; old is what was there (found).
type touchOp struct {
	key   string
	val   []byte
	ttl   time.Duration
	old   []byte
	found bool
	err   error
	done  chan struct{}
}

// getOrCreate runs op in the next pipeline and waits for it (or ctx).
func (b *touchBatch) getOrCreate(ctx context.Context, op *touchOp) error {
	op.done = make(chan struct{})
	b.mu.Lock()
	b.queue = append(b.queue, op)
	start := b.runners < maxTouchRunners
	if start {
		b.runners++
	}
	b.mu.Unlock()
	if start {
		go b.run()
	}
	select {
	case <-op.done:
		return op.err
	case <-ctx.Done():
		return ctx.Err() // it may still be made: a record with its TTL, as after any hello
	}
}

// run sends what is queued, one pipeline at a time, until nothing is.
func (b *touchBatch) run() {
	for {
		b.mu.Lock()
		ops := b.queue
		if len(ops) > maxTouchBatch {
			ops, b.queue = ops[:maxTouchBatch], ops[maxTouchBatch:]
		} else {
			b.queue = nil
		}
		if len(ops) == 0 {
			b.runners--
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		b.send(ops)
	}
}

func (b *touchBatch) send(ops []*touchOp) {
	ctx, cancel := context.WithTimeout(context.Background(), touchBatchPatience)
	defer cancel()
	pipe := b.rdb.Pipeline()
	cmds := make([]*goredis.StatusCmd, len(ops))
	for i, op := range ops {
		cmds[i] = pipe.SetArgs(ctx, op.key, op.val, goredis.SetArgs{Mode: "NX", Get: true, TTL: op.ttl})
	}
	_, _ = pipe.Exec(ctx) // each command holds its own answer
	for i, op := range ops {
		old, err := cmds[i].Result()
		switch {
		case err == goredis.Nil:
		case err != nil:
			op.err = err
		default:
			op.old, op.found = []byte(old), true
		}
		close(op.done)
	}
}
