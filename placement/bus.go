package placement

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Bus carries hints to the other nodes over Redis pub/sub: a kind of the
// caller's and its subject — what happened to a browser (its tools
// changed, a token of it was revoked; the subject its pairing id), where
// subscriptions/listen streams of that browser may be held, or a host's
// cancellation of a call running elsewhere (the subject the call's key).
// A message is a hint: a node that misses one (Redis away) still answers
// the next request right, and its streams check their tokens again on
// their own beat.
type Bus struct {
	client  goredis.UniversalClient
	channel string
	self    string
	log     *slog.Logger
}

// NewBus returns the bus of the nodes sharing client and prefix; self
// tells this node's own messages apart.
func NewBus(client goredis.UniversalClient, prefix, self string, log *slog.Logger) *Bus {
	return &Bus{client: client, channel: keys(prefix).events(), self: self, log: log}
}

// Publish tells the other nodes that kind happened to subject.
func (b *Bus) Publish(kind uint8, subject string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	msg := b.self + " " + strconv.Itoa(int(kind)) + " " + subject
	if err := b.client.Publish(ctx, b.channel, msg).Err(); err != nil {
		b.log.Warn("cluster hint not published", "err", err)
	}
}

// Run hands deliver every other node's hint until ctx ends.
func (b *Bus) Run(ctx context.Context, deliver func(kind uint8, subject string)) {
	listen(ctx, b.client, b.channel, func(payload string) {
		parts := strings.SplitN(payload, " ", 3)
		if len(parts) != 3 || parts[0] == b.self {
			return
		}
		if kind, err := strconv.ParseUint(parts[1], 10, 8); err == nil {
			deliver(uint8(kind), parts[2])
		}
	})
}

// listen hands fn every message of channel until ctx ends; go-redis
// resubscribes by itself after a lost connection.
func listen(ctx context.Context, client goredis.UniversalClient, channel string, fn func(payload string)) {
	sub := client.Subscribe(ctx, channel)
	defer sub.Close()
	ch := sub.Channel()
	for {
		select {
		case <-ctx.Done():
			return
		case msg, ok := <-ch:
			if !ok {
				return
			}
			fn(msg.Payload)
		}
	}
}
