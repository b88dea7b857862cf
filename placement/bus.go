package placement

import (
	"context"
	"log/slog"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Bus carries "the tools of this browser changed" to the other nodes
// (Redis pub/sub), where subscriptions/listen streams of that browser may
// be held. A message is a hint: a node that misses one (Redis away) still
// answers the next tools/list right.
type Bus struct {
	client  goredis.UniversalClient
	channel string
	self    string
	log     *slog.Logger
}

// NewBus returns the bus of the nodes sharing client and prefix; self
// tells this node's own messages apart.
func NewBus(client goredis.UniversalClient, prefix, self string, log *slog.Logger) *Bus {
	return &Bus{client: client, channel: keys(prefix).toolsChanged(), self: self, log: log}
}

// Publish tells the other nodes that pairing's tools changed.
func (b *Bus) Publish(pairing string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := b.client.Publish(ctx, b.channel, b.self+" "+pairing).Err(); err != nil {
		b.log.Warn("tools-changed hint not published", "err", err)
	}
}

// Run hands deliver every other node's hint until ctx ends.
func (b *Bus) Run(ctx context.Context, deliver func(pairing string)) {
	sub := b.client.Subscribe(ctx, b.channel)
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
			from, pairing, found := strings.Cut(msg.Payload, " ")
			if found && from != b.self {
				deliver(pairing)
			}
		}
	}
}
