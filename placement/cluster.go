package placement

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabrelay/tabrelay/actors"
)

// Config is what a node needs to join the cluster.
type Config struct {
	Client goredis.UniversalClient
	Prefix string // of every Redis key
	// Listen is host:port of the actor remote (gRPC, no TLS: a private
	// network only); Advertise is the address other nodes use, when it
	// differs.
	Listen    string
	Advertise string
	LeaseTTL  time.Duration
	// Lost is called when this node's lease lapsed: the node must exit.
	Lost func()
	// Actors configures the pairing actors this node activates.
	Actors     actors.Config
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

// Cluster is this node's part of the cluster.
type Cluster struct {
	Members     *Members
	Lookup      *Lookup
	Activations *actors.Activations // the pairing actors active here
	Bus         *Bus
	Metrics     *Metrics
	cl          *cluster.Cluster
	log         *slog.Logger
}

// Join starts remote and membership on system and returns once this node
// holds its lease and has read the member list.
func Join(ctx context.Context, system *actor.ActorSystem, cfg Config) (*Cluster, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	checkPrefix(cfg.Prefix)
	host, port, err := splitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("RELAY_CLUSTER_LISTEN: %w", err)
	}
	metrics := NewMetrics(cfg.Registerer)
	lookup := newLookup(system, cfg.Client, cfg.Prefix, cfg.LeaseTTL, cfg.Actors, cfg.Lost, metrics, cfg.Logger)
	members := lookup.members

	// protoactor sends a peer the messages queued for it as one gRPC
	// message (a batch of up to 1,000), and a call's arguments or a tab's
	// result may be megabytes (4 MiB from a host, 16 MiB from a tab): at
	// grpc's default 4 MiB receive limit such a batch broke the link, and
	// every actor behind it looked gone. The peers are our own nodes (the
	// remote port is private): no limit below grpc's own.
	ropts := []remote.ConfigOption{remote.WithServerOptions(grpc.ChainStreamInterceptor(recovering(cfg.Logger)),
		grpc.MaxRecvMsgSize(math.MaxInt32))}
	if cfg.Advertise != "" {
		ropts = append(ropts, remote.WithAdvertisedHost(cfg.Advertise))
	}
	// Pairing actors are started by Lookup through the node's
	// Activations (they need the node's config), never by protoactor:
	// the kind is registered so that members advertise it.
	kind := cluster.NewKind(Kind, actor.PropsFromFunc(func(actor.Context) {}))
	ccfg := cluster.Configure("tabrelay", members, lookup, remote.Configure(host, port, ropts...),
		cluster.WithKinds(kind),
		// Gossip runs anyway; its heartbeat must never expire a member
		// before the lease does (reference/protoactor.md).
		cluster.WithHeartbeatExpiration(20*cfg.LeaseTTL+20*time.Second),
		cluster.WithRequestTimeout(5*time.Second))
	cl := cluster.New(system, ccfg)
	// StartMember panics when remote cannot listen, and otherwise sleeps a
	// second once the member is started (protoactor's cluster.go:
	// time.Sleep(1 * time.Second)), which every node's start, a restart
	// under a storm of tabs included, waited out. Everything is set up
	// before that sleep: Members (the provider) is started last, after
	// remote listens, and its first lease closes Joined. So Join waits for
	// Joined or for the panic, not for the sleep.
	started := make(chan any, 1)
	go func() {
		defer func() { started <- recover() }()
		cl.StartMember()
	}()
	select {
	case p := <-started:
		if p != nil {
			return nil, fmt.Errorf("cluster remote on %s (RELAY_CLUSTER_LISTEN): %v", cfg.Listen, p)
		}
	case <-members.Joined():
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-members.Joined():
	case <-ctx.Done():
		_ = members.Shutdown(false)
		return nil, fmt.Errorf("cluster: no lease within the start-up time (is Redis reachable?): %w", ctx.Err())
	}
	c := &Cluster{Members: members, Lookup: lookup, Activations: lookup.acts, Metrics: metrics, cl: cl, log: cfg.Logger,
		Bus: NewBus(cfg.Client, cfg.Prefix, members.Self(), cfg.Logger)}
	cfg.Logger.Info("cluster joined", "member", members.Self(), "remote", system.Address())
	return c, nil
}

// Drain stops activating pairings here.
func (c *Cluster) Drain() { c.Lookup.Drain() }

// Leave ends this node's membership: its lease is removed and the others
// told; then the actor system and remote stop.
func (c *Cluster) Leave() {
	if err := c.Members.Shutdown(true); err != nil {
		c.log.Warn("cluster: leaving gracefully failed; the lease expires by itself", "err", err)
	}
	// Not cluster.Shutdown(true): it sleeps 2 s for an ownership transfer
	// this lookup does not do; the lease is gone already.
	c.cl.Shutdown(false)
}

// recovering keeps a bad message from crashing the node: protoactor's
// remote dereferences nil on a protobuf type the receiver does not know.
func recovering(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		defer func() {
			if p := recover(); p != nil {
				log.Error("cluster: a remote message crashed its reader; stream closed", "panic", fmt.Sprint(p),
					"method", info.FullMethod, "stack", string(debug.Stack()))
				err = status.Error(codes.Internal, "message not understood")
			}
		}()
		return handler(srv, ss)
	}
}

func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, errors.New("not a port: " + p)
	}
	return host, port, nil
}
