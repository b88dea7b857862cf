// Package node assembles one relay process from its parts: the store, the
// actor system and its pairing router, the tab endpoint, the HTTP routes,
// metrics, and the drain on shutdown. `tabrelay serve` runs it, and the
// end-to-end tests start it in-process so that they can drive calls through
// the same function the MCP front end uses (Node.Call).
//
// It is the only package besides cmd/tabrelay that knows every other one;
// it holds wiring and the shutdown order, no protocol or actor logic.
package node

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	goredis "github.com/redis/go-redis/v9"
	"github.com/tabrelay/tabrelay/actors"
	"github.com/tabrelay/tabrelay/events"
	"github.com/tabrelay/tabrelay/internal/clock"
	"github.com/tabrelay/tabrelay/internal/httpserver"
	"github.com/tabrelay/tabrelay/mcp"
	"github.com/tabrelay/tabrelay/oauth"
	"github.com/tabrelay/tabrelay/oauth/cimd"
	"github.com/tabrelay/tabrelay/pairing"
	"github.com/tabrelay/tabrelay/placement"
	"github.com/tabrelay/tabrelay/protocol"
	"github.com/tabrelay/tabrelay/store/bolt"
	"github.com/tabrelay/tabrelay/tabsocket"
	"github.com/tabrelay/tabrelay/web/demo"
)

// Config is one node's configuration (SPEC §9), already checked.
type Config struct {
	PublicURL   string
	Listen      string // host:port of the public listener
	AdminListen string // host:port of the admin listener (metrics)
	DataDir     string
	SigningKey  []byte // nil: generated and kept in the data dir
	// PreviousKeys, newest first, still verify what they hashed, and find
	// the pairings made under them, which a hello re-keys (rotation: put
	// the new key first and keep the old one here until its browsers came
	// back and its tokens expired; docs/security.md §7).
	PreviousKeys   [][]byte
	AllowedOrigins []string
	AppURL         string
	// NoCrossDevice refuses typed connect codes: only a link approval in
	// the browser that opened the waiting page connects
	// (RELAY_CONNECT_CROSS_DEVICE=false).
	NoCrossDevice bool
	// Demo serves the demo app (web/demo) at /demo/ on the public listener.
	Demo     bool
	Bundle   *protocol.Bundle // nil: the demo app's
	CallWait time.Duration
	TurnIdle time.Duration
	// JSONWait is how long a tools/call of a host that accepts both shapes
	// waits for its answer before it opens the event stream
	// (mcp.Config.JSONWait; 0: its default).
	JSONWait time.Duration
	// KeepAlive is how often a call's event stream says something while
	// the call waits: progress to a host that sent a progress token, a
	// comment otherwise (mcp.Config.KeepAlive; 0: its default, 15 s).
	KeepAlive   time.Duration
	DrainWindow time.Duration // tabs reconnect spread over this window
	Grace       time.Duration // a shutdown ends within this
	Version     string
	// ShutdownDelay is how long after a shutdown began the node, already
	// unready, keeps accepting requests (and answers them): a balancer
	// without a pre-stop hook sends new requests until it saw /ready fail
	// (issue 17). 0: the listener closes as soon as the drain allows.
	ShutdownDelay time.Duration
	// CIMDAllowLoopback lets client metadata documents be fetched from
	// loopback addresses: a test switch, off by default. CIMDRootCAs
	// replaces the system's roots for those fetches (tests).
	CIMDAllowLoopback bool
	CIMDRootCAs       *x509.CertPool
	// TrustProxy takes client addresses from X-Forwarded-For (the relay is
	// behind a load balancer) for per-address limits.
	TrustProxy bool
	// MaxPairings bounds the pairing actors this node holds (0: the
	// actors' default); NewPairingsBurst and NewPairingsPerHour the hellos
	// of unknown browsers per address, in the store (0: the tab
	// endpoint's defaults; a negative NewPairingsPerHour: no limit).
	MaxPairings        int
	NewPairingsBurst   int
	NewPairingsPerHour int
	// AdminToken opens the admin API (/admin/… on the admin listener) to
	// requests bearing it; empty: the admin API is off.
	AdminToken string
	// AdminHosts are the host names the admin listener answers besides IP
	// addresses and loopback names (RELAY_ADMIN_HOSTS; admin.HostGuard).
	AdminHosts []string
	// Clock is the clock of the call rules (the wait, turns, passivation);
	// tests move a fake one. Sockets keep real time: their pings must go
	// on while a test jumps the call wait forward.
	Clock  clock.Clock
	Logger *slog.Logger

	// Redis, when set, makes this node one of a cluster (SPEC §7): the
	// store, membership and placement live in that Redis under
	// RedisPrefix; ClusterListen is the actor remote's host:port and
	// ClusterAdvertise the address other nodes use, if it differs. It
	// names one server, a Sentinel-watched master (MasterName) or a Redis
	// Cluster (IsClusterMode), as go-redis's NewUniversalClient reads it.
	Redis            *goredis.UniversalOptions
	RedisPrefix      string
	ClusterListen    string
	ClusterAdvertise string
	LeaseTTL         time.Duration
	// OnLost is called when the node lost its cluster lease and must exit
	// (to come back under a new member id); nil: the process exits 1.
	OnLost func()
}

// store is what the node keeps in its store, embedded or Redis.
type store interface {
	oauth.Store
	pairing.Store
}

// Node is one running relay process.
type Node struct {
	cfg      Config
	log      *slog.Logger
	store    store
	bolt     *bolt.Store             // the embedded store (single node), or nil
	redis    goredis.UniversalClient // cluster mode, or nil
	cluster  *placement.Cluster
	acts     *actors.Activations
	ready    prometheus.Gauge
	redisUp  atomic.Bool
	system   *actor.ActorSystem
	caller   *actors.Caller
	tabs     *tabsocket.Server
	oauth    *oauth.Server
	mcp      *mcp.Server
	events   *events.Hub
	registry *prometheus.Registry
	metrics  *actors.Metrics
	// httpRequests counts the public listener's requests.
	httpRequests *prometheus.CounterVec

	public, admin *http.Server
	publicLn      net.Listener
	adminLn       net.Listener

	draining  atomic.Bool
	unreadyAt time.Time       // when Shutdown began (Shutdown's goroutine only)
	shutdown  atomic.Bool     // Shutdown ran
	stopCtx   context.Context // done when calls still in flight must end
	stopNow   context.CancelFunc
}

// New opens the store and builds the node; Start listens.
func New(cfg Config) (*Node, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Bundle == nil {
		cfg.Bundle = demo.Bundle()
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(buildInfo(cfg.Version))
	n := &Node{cfg: cfg, log: cfg.Logger, registry: reg}
	n.ready = prometheus.NewGauge(prometheus.GaugeOpts{Name: "tabrelay_ready",
		Help: "1 while the node is ready (store reachable, cluster joined, not draining), else 0."})
	reg.MustRegister(n.ready)
	n.stopCtx, n.stopNow = context.WithCancel(context.Background())
	if cfg.CIMDAllowLoopback {
		cfg.Logger.Warn("TEST SWITCH ON: client metadata documents may be fetched from loopback addresses (RELAY_CIMD_ALLOW_LOOPBACK); never in production")
	}
	n.system = actors.NewSystem(cfg.Logger)
	n.metrics = actors.NewMetrics(reg)
	n.httpRequests = httpserver.NewRequests(reg)
	// A rebuilt pairing waits for its tabs at least as long as a draining
	// node spreads their reconnects.
	acfg := actors.Config{CallWait: cfg.CallWait, TurnIdle: cfg.TurnIdle, RebuildGrace: cfg.DrainWindow + actors.DefaultTabGrace,
		MaxPairings: cfg.MaxPairings, Clock: cfg.Clock, Logger: cfg.Logger, Metrics: n.metrics}
	router, key, err := n.openStore(&acfg)
	if err != nil {
		n.system.Shutdown()
		return nil, err
	}
	n.caller = actors.NewCaller(n.system, router, acfg)
	// Each part is built after the parts it reads: the events (and the
	// bus under them), the authorization server that publishes on them,
	// the MCP front end, the tab endpoint; then the tabs hear the
	// connection changes, and the other nodes' events start coming.
	var eventBus events.Bus
	if n.cluster != nil {
		eventBus = bus{n.cluster.Bus}
	}
	n.events = events.New(eventBus)
	n.oauth, err = oauth.NewServer(oauth.Config{
		Issuer: cfg.PublicURL, AppURL: cfg.AppURL, NoCrossDevice: cfg.NoCrossDevice, Bundle: cfg.Bundle, Store: n.store,
		Hasher: oauth.NewHasher(append([][]byte{key}, cfg.PreviousKeys...)...),
		CIMD:   cimd.NewFetcher(cimd.Options{AllowLoopback: cfg.CIMDAllowLoopback, RootCAs: cfg.CIMDRootCAs}),
		Clock:  cfg.Clock, Logger: cfg.Logger, Metrics: oauth.NewMetrics(reg), TrustProxy: cfg.TrustProxy,
		Revoked: n.events.Revoked, ConnectionsChanged: n.events.ConnectionsChanged,
		VerifiedFor: verifiedFor(cfg),
	})
	if err == nil {
		n.mcp, err = n.newMCP()
	}
	if err == nil {
		n.tabs, err = tabsocket.NewServer(tabsocket.Config{
			AllowedOrigins: cfg.AllowedOrigins, SigningKey: key, PreviousKeys: cfg.PreviousKeys, Store: n.store, Connections: n.oauth,
			ToolsChanged: n.events.ToolsChanged, TrustProxy: cfg.TrustProxy, BundleVersion: cfg.Bundle.Version,
			NewPairingsBurst: cfg.NewPairingsBurst, NewPairingsPerHour: cfg.NewPairingsPerHour,
			Hub: TabHub(actors.NewHub(n.system, router, acfg)), Clock: clock.Real{}, Logger: cfg.Logger,
			Metrics: tabsocket.NewMetrics(reg),
		})
	}
	if err == nil {
		n.hearEvents()
	}
	if err != nil {
		n.system.Shutdown()
		n.closeStore()
		return nil, err
	}
	n.public = httpserver.New("public", n.publicRoutes(), cfg.Logger)
	n.admin = httpserver.New("admin", n.adminRoutes(), cfg.Logger)
	return n, nil
}

// hearEvents wires what this node does when something happens to a
// browser, here or (through the bus) on another node: a browser's
// connections changed, its tabs here are pushed the list; a token or a
// connection of it changed elsewhere, the checks this node kept of that
// browser go before its listeners check their tokens again (its own
// changes drop them in oauth); a call another node was asked to cancel
// runs here, it ends.
func (n *Node) hearEvents() {
	n.events.Forward(events.ConnectionsChanged, n.tabs.PushConnections)
	n.events.Forward(events.CallCancelled, func(key string) { n.mcp.CancelLocal(key) })
	n.events.FromElsewhere(events.ConnectionsChanged|events.TokenRevoked, n.oauth.DropVerified)
	if n.cluster != nil {
		go n.cluster.Bus.Run(n.stopCtx, func(kind uint8, subject string) { n.events.Arrived(events.Kind(kind), subject) })
	}
}

// verifiedFor is how long a bearer check is kept (oauth.Config.VerifiedFor):
// on one node every change is its own and drops the checks it touches; in
// a cluster the other nodes' changes come as hints over Redis pub/sub,
// which may lose them, so a check is read again after 1 s (SPEC §5).
func verifiedFor(cfg Config) time.Duration {
	if cfg.Redis != nil {
		return time.Second
	}
	return 0
}

func buildInfo(version string) prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tabrelay_build_info", Help: "The running build."}, []string{"version"})
	g.WithLabelValues(version).Set(1)
	return g
}

// Start opens both listeners and serves them in the background.
func (n *Node) Start() error {
	var err error
	if n.publicLn, err = net.Listen("tcp", n.cfg.Listen); err != nil {
		return fmt.Errorf("listen on %s (RELAY_LISTEN): %w", n.cfg.Listen, err)
	}
	if n.adminLn, err = net.Listen("tcp", n.cfg.AdminListen); err != nil {
		n.publicLn.Close()
		return fmt.Errorf("listen on %s (RELAY_ADMIN_LISTEN): %w", n.cfg.AdminListen, err)
	}
	go n.serve(n.public, n.publicLn)
	go n.serve(n.admin, n.adminLn)
	kind := "embedded"
	if n.bolt != nil {
		// Expired codes, tokens and families leave the store every 10
		// minutes (Redis expires its keys by itself).
		go n.bolt.SweepEvery(n.stopCtx, 10*time.Minute, n.cfg.Clock.Now, n.log)
		n.redisUp.Store(true)
	} else {
		kind = "redis"
		n.redisUp.Store(true) // it answered while the node joined
		go n.watchRedis()
	}
	n.setReady()
	n.log.Info("relay listening", "public", n.publicLn.Addr().String(), "admin", n.adminLn.Addr().String(),
		"public_url", n.cfg.PublicURL, "store", kind, "bundle", n.cfg.Bundle.Version)
	return nil
}

func (n *Node) serve(s *http.Server, ln net.Listener) {
	if err := s.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		n.log.Error("listener failed", "addr", ln.Addr().String(), "err", err)
	}
}

// Addr is the public listener's address (after Start).
func (n *Node) Addr() string { return n.publicLn.Addr().String() }

// AdminAddr is the admin listener's address (after Start).
func (n *Node) AdminAddr() string { return n.adminLn.Addr().String() }

// Call runs one tool call on a pairing and returns how it ended: the
// actors' Caller, which the MCP front end calls (tests call it here).
func (n *Node) Call(ctx context.Context, req protocol.CallRequest, events func(protocol.CallEvent)) protocol.Outcome {
	return n.caller.Call(ctx, req, events)
}

// Inspect returns a pairing's state.
func (n *Node) Inspect(ctx context.Context, pairing string) (*actors.Snapshot, error) {
	return n.caller.Inspect(ctx, pairing)
}

// OAuth is the node's authorization server (Verify, for the MCP front end).
func (n *Node) OAuth() *oauth.Server { return n.oauth }

// Metrics returns the node's registry.
func (n *Node) Metrics() *prometheus.Registry { return n.registry }

// Shutdown drains the node within its grace period (SPEC §6, §7).
// A second Shutdown does nothing.
func (n *Node) Shutdown(ctx context.Context) {
	if !n.shutdown.CompareAndSwap(false, true) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.Grace)
	defer cancel()
	start := time.Now()
	n.unreadyAt = start
	n.draining.Store(true)
	if n.cluster == nil {
		n.caller.Refuse() // one node: nothing can take a call
	}
	n.setReady()
	n.log.Info("relay draining", "grace", n.cfg.Grace.String(), "window", n.cfg.DrainWindow.String(),
		"delay", n.cfg.ShutdownDelay.String())
	if n.cluster != nil {
		n.shutdownMember(ctx)
	} else {
		n.shutdownAlone(ctx)
	}
	n.closeStore()
	n.log.Info("relay stopped", "took", time.Since(start).Round(time.Millisecond).String())
}

// shutdownAlone drains a single node: no call starts (a call that enters
// is answered with the restarting sentence before anything ran); calls in
// flight get half the grace to finish, then end with the restarting
// sentence; tabs are told to reconnect spread over the drain window; the
// listeners close, not before the shutdown delay.
func (n *Node) shutdownAlone(ctx context.Context) {
	half, cancelHalf := context.WithTimeout(ctx, n.cfg.Grace/2)
	noCalls := func() bool { return n.caller.InFlight() == 0 }
	n.waitUntil(half, noCalls)
	cancelHalf()
	n.caller.StopCalls()
	n.stopNow()
	n.waitUntil(ctx, noCalls)
	n.events.Close() // listen streams end with their result
	n.tabs.Drain(ctx, n.window(ctx))
	n.closePublic(ctx)
	_ = n.admin.Shutdown(ctx)
	n.system.Shutdown()
}

// shutdownMember drains a cluster member: it stops activating pairings;
// its tabs are told to reconnect (to other nodes, spread over the drain
// window), where they register with their pairings, still here; then its
// pairings without calls stop (their tabs activate them again where they
// are now) and those with calls move, calls and all, to other members.
// The front end serves what enters until the listener closes, not before
// the shutdown delay; calls still in flight on it near the grace's end are
// ended with the restarting sentence. Last, the node leaves the cluster
// (its lease deleted, the others told).
func (n *Node) shutdownMember(ctx context.Context) {
	n.cluster.Drain()
	n.events.Close()
	n.tabs.Drain(ctx, n.window(ctx))
	n.acts.HandOff(n.cluster.Lookup.Adopters, n.cluster.Members.Self())
	// Requests in flight may go on until a tenth of the grace (at most
	// 2 s) is left; then what is left ends with the restarting sentence.
	margin := min(n.cfg.Grace/10, 2*time.Second)
	late, cancelLate := context.WithDeadline(ctx, deadlineOf(ctx).Add(-margin))
	defer cancelLate()
	n.waitUntil(late, func() bool { return n.acts.Count() == 0 && n.caller.InFlight() == 0 })
	n.closePublic(late)
	n.caller.StopCalls()
	n.stopNow()
	_ = n.public.Shutdown(ctx)
	_ = n.admin.Shutdown(ctx)
	n.cluster.Leave() // stops the actor system too
}

// closePublic closes the public listener once the shutdown delay since
// the node turned unready has passed, and waits, until ctx ends, for the
// requests it accepted to be answered. Until then every response asks its
// client to close the connection (httpserver.CloseWhileDraining), so that a host's
// next request dials again, and a balancer sends it to a ready node.
func (n *Node) closePublic(ctx context.Context) {
	if wait := time.Until(n.unreadyAt.Add(n.cfg.ShutdownDelay)); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	_ = n.public.Shutdown(ctx)
}

// window is the drain window, within half the time left.
func (n *Node) window(ctx context.Context) time.Duration {
	window := n.cfg.DrainWindow
	if left := time.Until(deadlineOf(ctx)) / 2; window > left {
		window = left
	}
	return window
}

func deadlineOf(ctx context.Context) time.Time {
	d, ok := ctx.Deadline()
	if !ok {
		return time.Now().Add(time.Minute)
	}
	return d
}

// waitUntil waits until done reports true or ctx is done. It polls: it
// runs once per shutdown, and counters keep Call's hot path to two atomics.
func (n *Node) waitUntil(ctx context.Context, done func() bool) {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for !done() {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
