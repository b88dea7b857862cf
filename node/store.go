package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	goredis "github.com/redis/go-redis/v9"

	"github.com/tabrelay/tabrelay/actors"
	"github.com/tabrelay/tabrelay/events"
	"github.com/tabrelay/tabrelay/placement"
	"github.com/tabrelay/tabrelay/store/bolt"
	redisstore "github.com/tabrelay/tabrelay/store/redis"
)

// openStore opens the node's store and its router to pairings: the
// embedded store and every pairing in this process, or Redis and a place
// in the cluster. The pairings read the marks of drained browsers there
// (acfg.Drained). It returns the signing key.
func (n *Node) openStore(acfg *actors.Config) (actors.Router, []byte, error) {
	cfg := n.cfg
	if cfg.Redis == nil {
		b, err := bolt.Open(cfg.DataDir)
		if err != nil {
			return nil, nil, err
		}
		key := cfg.SigningKey
		if key == nil {
			if key, err = b.SigningKey(); err != nil {
				b.Close()
				return nil, nil, fmt.Errorf("signing key: %w", err)
			}
		}
		n.bolt, n.store = b, b
		acfg.Drained = b
		router := actors.NewLocalRouter(n.system, *acfg)
		n.acts = router.Activations
		return router, key, nil
	}
	if cfg.SigningKey == nil {
		return nil, nil, fmt.Errorf("a signing key is required with Redis")
	}
	redisLogOnce.Do(func() { goredis.SetLogger(redisLog{n.log}) }) // process-wide, as go-redis has it
	n.redis = goredis.NewUniversalClient(cfg.Redis)
	n.store = redisstore.New(n.redis, cfg.RedisPrefix)
	acfg.Drained = n.store
	lost := cfg.OnLost
	if lost == nil {
		lost = func() {
			n.log.Error("exiting: the cluster lease was lost")
			os.Exit(1)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	switch err := redisstore.CheckVersion(ctx, n.redis); {
	case errors.Is(err, redisstore.ErrVersionUnknown):
		n.log.Warn("Redis does not say its version: the relay needs "+redisstore.MinVersion+" or later", "err", err)
	case err != nil:
		n.redis.Close()
		return nil, nil, err
	}
	cl, err := placement.Join(ctx, n.system, placement.Config{
		Client: n.redis, Prefix: cfg.RedisPrefix, Listen: cfg.ClusterListen, Advertise: cfg.ClusterAdvertise,
		LeaseTTL: cfg.LeaseTTL, Lost: lost, Actors: *acfg, Registerer: n.registry, Logger: cfg.Logger,
	})
	if err != nil {
		n.redis.Close()
		return nil, nil, err
	}
	n.cluster, n.acts = cl, cl.Activations
	return cl.Lookup, cfg.SigningKey, nil
}

func (n *Node) closeStore() {
	var err error
	switch {
	case n.bolt != nil:
		err = n.bolt.Close()
	case n.redis != nil:
		err = n.redis.Close()
	}
	if err != nil {
		n.log.Error("store close failed", "err", err)
	}
}

// watchRedis pings Redis twice a second: while it does not answer, the
// node is not ready and its public routes answer 503 at once, instead of
// every request waiting for its own timeout. The node recovers by itself.
func (n *Node) watchRedis() {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	var master string // the master's run id(s) as last read
	unread := false   // the last read of the master failed while Redis answered
	for beat := 0; ; beat++ {
		ctx, cancel := context.WithTimeout(n.stopCtx, 400*time.Millisecond)
		err := ping(ctx, n.redis)
		cancel()
		if n.stopCtx.Err() != nil {
			return
		}
		up := err == nil
		// Read again at every beat until a read succeeds: a Redis Cluster
		// answers a ping before its replica is promoted, and the read of
		// every master fails until it is.
		if up && (!n.redisUp.Load() || beat%10 == 0 || unread) {
			master, unread = n.checkMaster(master)
		}
		if was := n.redisUp.Swap(up); was != up {
			if up {
				n.log.Info("Redis reachable again")
			} else {
				n.cluster.Metrics.RedisErrors.Inc()
				n.log.Error("Redis unreachable: answering 503 until it is back", "err", err)
			}
			n.setReady()
		}
		select {
		case <-n.stopCtx.Done():
			return
		case <-t.C:
		}
	}
}

// checkMaster reads which master answers (every 5 s, and when Redis is
// back) and counts a change from last, the one read before: a failover
// promoted a replica, or the server restarted. It returns what it read,
// or last and unread when the read failed.
func (n *Node) checkMaster(last string) (read string, unread bool) {
	ctx, cancel := context.WithTimeout(n.stopCtx, 400*time.Millisecond)
	defer cancel()
	now, err := masterID(ctx, n.redis)
	if err != nil || now == "" {
		return last, true
	}
	if last != "" && now != last {
		n.cluster.Metrics.RedisMasterChanges.Inc()
		n.log.Warn("another Redis master answers than before: a failover, or a restart of the server")
	}
	return now, false
}

// masterID is the run id of the Redis master that answers, or of every
// master of a Redis Cluster, sorted.
func masterID(ctx context.Context, client goredis.UniversalClient) (string, error) {
	cc, ok := client.(*goredis.ClusterClient)
	if !ok {
		return runID(ctx, client)
	}
	var mu sync.Mutex
	var ids []string
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error {
		id, err := runID(ctx, c)
		mu.Lock()
		ids = append(ids, id)
		mu.Unlock()
		return err
	})
	slices.Sort(ids)
	return strings.Join(ids, ","), err
}

// runID reads a server's run id, which changes when it restarts.
func runID(ctx context.Context, c goredis.Cmdable) (string, error) {
	s, err := redisstore.ReadServer(ctx, c)
	return s.RunID, err
}

// ping asks Redis whether it answers. A Redis Cluster is asked on every
// master, as the last reload of its slots says (a reload every time: it
// is what finds the replica promoted after a master died, issue 16): a
// master that does not answer leaves some keys unreachable, so the node
// is not ready until its replica took over.
func ping(ctx context.Context, client goredis.UniversalClient) error {
	if cc, ok := client.(*goredis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error { return c.Ping(ctx).Err() })
	}
	return client.Ping(ctx).Err()
}

// readiness says whether the node is ready, and if not why.
func (n *Node) readiness() (bool, string) {
	switch {
	case n.draining.Load():
		return false, "draining"
	case !n.redisUp.Load():
		return false, "store unreachable"
	}
	return true, ""
}

func (n *Node) setReady() {
	ok, _ := n.readiness()
	if ok {
		n.ready.Set(1)
	} else {
		n.ready.Set(0)
	}
}

var redisLogOnce sync.Once

// redisLog routes go-redis's own lines (a failed dial, say) into the
// node's log at DEBUG: the node reports Redis trouble itself, once, and a
// dial failure per pooled connection is noise to an operator.
type redisLog struct{ log *slog.Logger }

func (l redisLog) Printf(_ context.Context, format string, v ...any) {
	l.log.Debug(fmt.Sprintf(format, v...), "lib", "go-redis")
}

// bus is the cluster's bus as the MCP front end's events see it.
type bus struct{ *placement.Bus }

func (b bus) Publish(kind events.Kind, subject string) { b.Bus.Publish(uint8(kind), subject) }

// gaugeValue reads a gauge.
func gaugeValue(g prometheus.Gauge) float64 {
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		return -1
	}
	return m.GetGauge().GetValue()
}
