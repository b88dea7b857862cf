// Package tabsocket is the relay's /tab endpoint: it turns a WebSocket
// into a proven tab connection and hands it to the actors' Hub (SPEC §6).
// It owns the socket's life: the Origin check, the hello deadline, one
// reader and one writer with a bounded send queue, pings, rate and size
// limits, and the close codes of protocol. It never blocks an actor, and
// never logs a tab secret.
package tabsocket

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/tabrelay/tabrelay/internal/clock"
	"github.com/tabrelay/tabrelay/pairing"
	"github.com/tabrelay/tabrelay/protocol"
)

// Defaults of Config (SPEC §6, §10).
const (
	DefaultHelloTimeout = 10 * time.Second
	DefaultPingInterval = 25 * time.Second
	DefaultSendQueue    = 256
	DefaultWriteTimeout = 10 * time.Second
	// DefaultCloseTimeout bounds a socket's end: coder/websocket's close
	// handshake waits 5 s to write the frame and 5 s for the answer, but
	// skips the payload of frames that arrive meanwhile with no deadline
	// at all, so a peer that announces a huge frame and stalls would hold
	// the connection for good. After this the TCP connection is closed.
	DefaultCloseTimeout = 10 * time.Second
	DefaultRatePerSec   = 100
	DefaultRateBurst    = 400
	// helloReadLimit caps what an unproven socket may send.
	helloReadLimit = 4 << 10
)

// Config is what the tab endpoint needs.
type Config struct {
	// AllowedOrigins are the app's origins ("https://app.example.com"),
	// compared exactly: never a prefix (a prefix match accepted
	// 127.0.0.1.evil.com in a bridge we measure ourselves against).
	AllowedOrigins []string
	SigningKey     []byte
	// PreviousKeys are signing keys used before SigningKey, newest first
	// (RELAY_SIGNING_KEY_PREVIOUS): a browser whose pairing was made under
	// one of them is found by its hello and re-keyed (issue 15, defect 8).
	PreviousKeys [][]byte
	Store        pairing.Store
	Hub          Tabs
	// Connections decides for the tab's requests about connections
	// (connect-info, approve, decline, list-connections, forget,
	// set-scope); nil answers them as unsupported.
	Connections Connections
	// TrustProxy takes the tab's address from X-Forwarded-For (behind a
	// load balancer), for the per-address limits on wrong connect codes.
	TrustProxy bool
	// BundleVersion is the catalogue version the relay serves; a tab that
	// runs another (the app was deployed) makes hosts list the tools anew.
	BundleVersion string
	// ToolsChanged hears a tab's permissions-changed, or a tab that runs
	// another bundle than the relay's (nil: nobody listens).
	ToolsChanged func(pairing string)
	HelloTimeout time.Duration
	PingInterval time.Duration
	SendQueue    int // messages queued for one tab before it counts as slow
	WriteTimeout time.Duration
	CloseTimeout time.Duration // real time, as the library's own waits
	RatePerSec   int           // messages a tab may send per second, sustained
	RateBurst    int
	// MaxHandshakes bounds the upgrades worked on at once (0:
	// DefaultMaxHandshakes, negative: no bound); one over it waits up to
	// HandshakeWait (0: DefaultHandshakeWait) for its turn, and is then
	// refused with 503 and Retry-After.
	MaxHandshakes int
	HandshakeWait time.Duration
	// NewPairingsBurst and NewPairingsPerHour bound the hellos of browsers
	// the relay does not know from one address, in the store: so many at
	// once, then so many an hour (0: DefaultNewPairingsBurst,
	// DefaultNewPairingsPerHour; a negative NewPairingsPerHour: no limit).
	// Over it, such a hello is closed with CloseUnavailable and a reason
	// that says when to come back; known browsers are never refused for it.
	NewPairingsBurst   int
	NewPairingsPerHour int
	Clock              clock.Clock
	Logger             *slog.Logger
	Metrics            *Metrics
}

// Tabs takes the proven sockets as tabs (the actors' Hub, as node hands
// it over): the endpoint declares what it needs of the actors and imports
// none of them.
type Tabs interface {
	Accept(info TabInfo, out Outbox) Tab
}

// TabInfo is what a tab proved and said in its hello.
type TabInfo struct {
	Pairing   string
	TabID     string
	FocusedAt time.Time
}

// Tab is one accepted socket's tab: what it reads goes there.
type Tab interface {
	// Forward hands the pairing what the tab said.
	Forward(msg protocol.FromTab)
	// Focus reports that the person focused the tab at at.
	Focus(at time.Time)
	// Close ends the tab (its socket ended).
	Close()
}

// Outbox is the socket as its tab sees it (conn is one).
type Outbox interface {
	// Send queues a message for the tab and never blocks; false: the tab
	// is gone or too slow to read.
	Send(msg protocol.ToTab) bool
	// SendHeld queues msg and, when no writer runs, returns the writer's
	// start for the caller to run (inline, in its own goroutine, or in a
	// new one) instead of starting it.
	SendHeld(msg protocol.ToTab) (start func(inline bool), ok bool)
	// Close ends the socket with code.
	Close(code protocol.CloseCode)
}

// Server serves /tab.
type Server struct {
	cfg     Config
	origins map[string]bool

	newPairings newPairings
	derive      *pairing.Deriver // under cfg.SigningKey
	handshakes  gate
	upgrades    chan upgrade // to an idle handshake worker (handshake.go)
	// pings and writes are the sockets' shared schedules (schedule.go):
	// the pings take the sockets due from pingWheel, the writes walk the
	// sockets whose writer runs.
	pings, writes *schedule
	pingWheel     *pingWheel
	writingConns  connSet

	mu       sync.Mutex // guards the fields below
	conns    map[*conn]struct{}
	draining bool
	idle     *sync.Cond      // signalled when conns shrinks
	refused  map[string]bool // origins refused and logged, at most maxLoggedOrigins
	// pushes holds the pairings whose connections are being read for a
	// push; true: they changed again meanwhile, read once more.
	pushes map[string]bool
}

// maxLoggedOrigins bounds the origins whose refusal is logged: the first
// refusal of each says what to fix (a page's browser cannot see the 403),
// and a scan of made-up origins cannot flood the log.
const maxLoggedOrigins = 64

// NewServer checks cfg and returns the endpoint.
func NewServer(cfg Config) (*Server, error) {
	if len(cfg.SigningKey) < 32 {
		return nil, errors.New("tabsocket: the signing key must have at least 32 bytes")
	}
	if cfg.Store == nil || cfg.Hub == nil {
		return nil, errors.New("tabsocket: a store and a hub are required")
	}
	origins := map[string]bool{}
	for _, o := range cfg.AllowedOrigins {
		n, err := NormalizeOrigin(o)
		if err != nil {
			return nil, err
		}
		origins[n] = true
	}
	if len(origins) == 0 {
		return nil, errors.New("tabsocket: at least one allowed origin is required")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.HelloTimeout, DefaultHelloTimeout)
	def(&cfg.PingInterval, DefaultPingInterval)
	def(&cfg.WriteTimeout, DefaultWriteTimeout)
	def(&cfg.CloseTimeout, DefaultCloseTimeout)
	def(&cfg.HandshakeWait, DefaultHandshakeWait)
	if cfg.MaxHandshakes == 0 {
		cfg.MaxHandshakes = DefaultMaxHandshakes
	}
	if cfg.SendQueue <= 0 {
		cfg.SendQueue = DefaultSendQueue
	}
	if cfg.RatePerSec <= 0 {
		cfg.RatePerSec = DefaultRatePerSec
	}
	if cfg.RateBurst <= 0 {
		cfg.RateBurst = DefaultRateBurst
	}
	if cfg.NewPairingsPerHour == 0 {
		cfg.NewPairingsPerHour = DefaultNewPairingsPerHour
	}
	if cfg.NewPairingsBurst <= 0 {
		cfg.NewPairingsBurst = DefaultNewPairingsBurst
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	s := &Server{cfg: cfg, origins: origins, conns: map[*conn]struct{}{}, refused: map[string]bool{},
		pushes: map[string]bool{}, upgrades: make(chan upgrade)}
	s.idle = sync.NewCond(&s.mu)
	s.derive = pairing.NewDeriver(cfg.SigningKey)
	s.newSchedules()
	s.handshakes = newGate(cfg.MaxHandshakes, cfg.HandshakeWait, cfg.Clock)
	s.newPairings = newPairings{rate: newPairingRate(cfg.NewPairingsBurst, cfg.NewPairingsPerHour), spent: map[string]time.Time{}}
	return s, nil
}

// Connections is the authorization server's side of a tab: the person's
// decisions about connections, for the pairing the tab proved.
type Connections interface {
	ConnectInfo(ctx context.Context, pairing, addr, code string) (protocol.ConnectInfo, error)
	// ApproveVia approves code, which reached the tab via a link or
	// typed; a link approval answers the relay page where the browser
	// proves it opened the waiting page, and no connection yet.
	ApproveVia(ctx context.Context, pairing, addr, code string, scope []protocol.ScopeEntry, via string) (protocol.ConnectionInfo, string, error)
	Decline(ctx context.Context, pairing, addr, code string) error
	Connections(ctx context.Context, pairing string) ([]protocol.ConnectionInfo, error)
	Forget(ctx context.Context, pairing, connection string) error
	SetScope(ctx context.Context, pairing, connection string, scope []protocol.ScopeEntry) (protocol.ConnectionInfo, error)
}

// NormalizeOrigin returns an origin as browsers send it: lowercase
// scheme://host[:port], no path, no trailing slash.
func NormalizeOrigin(o string) (string, error) {
	n := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(o), "/"))
	scheme, rest, ok := strings.Cut(n, "://")
	if !ok || (scheme != "http" && scheme != "https") || rest == "" || strings.ContainsAny(rest, "/?#@ ") {
		return "", errors.New("tabsocket: an allowed origin must look like https://app.example.com, not " + o)
	}
	return n, nil
}

func (s *Server) track(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		return false
	}
	s.conns[c] = struct{}{}
	if len(s.conns) == 1 {
		s.pings.start()
		s.writes.start()
	}
	return true
}

func (s *Server) untrack(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
	if len(s.conns) == 0 {
		s.pings.stop()
		s.writes.stop()
	}
	s.idle.Broadcast()
}

// Conns reports how many tab sockets are open.
func (s *Server) Conns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// DrainRate is the pace, in tabs a second, at which a drain spreads its
// tabs' reconnects: under half of what one node admits on two cores
// (docs/BENCHMARKS.md: ~5,000 new browsers a second on the embedded
// store, ~4,000 on Redis; a drained tab's hello costs no more), so that
// the node that takes them, the drained one restarted or another, has
// room for its calls. 40 tabs are back within 20 ms, 19,000 within the
// window (RELAY_DRAIN_WINDOW) that caps the spread.
const DrainRate = 2000

// DrainedBackWithin is how long after its reconnect delay a drained tab
// is expected back: the restart of a single node (seconds when it is
// started again at once) and the tab's waits while nothing answers
// (docs/tab-protocol.md §15: ceilings of 0.5, 1, 2, 4 and 8 s, 15.5 s in
// all). Until then a call for its browser waits for it rather than
// hearing that no tab is open (pairing.Drained).
const DrainedBackWithin = 20 * time.Second

// markWait bounds the write of a drain's marks: the tabs are told
// without them rather than late.
const markWait = 2 * time.Second

// drainSpread is the time over which a drain of n tabs spreads their
// reconnects: admitting them at DrainRate, within window.
func drainSpread(n int, window time.Duration) time.Duration {
	return min(window, time.Duration(n)*time.Second/DrainRate)
}

// Drain refuses new tabs, tells every tab to reconnect after a delay drawn
// from [0, spread), the spread sized by their number (drainSpread) within
// window, so that they do not all arrive at once, closes their sockets
// with CloseShutdown, and waits for them to end or ctx to be done. Before
// the first tab is told, the store keeps a mark of each browser drained
// and until when its tabs are expected back: a call for it on any node,
// this one restarted included, waits for them until then.
func (s *Server) Drain(ctx context.Context, window time.Duration) {
	s.mu.Lock()
	s.draining = true
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	spread := drainSpread(len(conns), window)
	now := s.cfg.Clock.Now()
	delays := make([]time.Duration, len(conns))
	marks := map[string]pairing.Drained{}
	for i, c := range conns {
		if spread > 0 {
			delays[i] = rand.N(spread)
		}
		if !c.proven.Load() {
			continue
		}
		until := now.Add(delays[i] + DrainedBackWithin)
		if m, ok := marks[c.pairing]; !ok || until.After(m.Until) {
			marks[c.pairing] = pairing.Drained{At: now, Until: until}
		}
	}
	mctx, cancel := context.WithTimeout(ctx, markWait)
	err := s.cfg.Store.MarkDrained(mctx, marks)
	cancel()
	if err != nil {
		s.cfg.Logger.Warn("drained browsers not marked: calls may hear that no tab is open until their tabs are back",
			"browsers", len(marks), "err", err)
	}
	s.cfg.Logger.Info("tabs told to reconnect", "tabs", len(conns), "browsers", len(marks), "spread", spread.String())
	for i, c := range conns {
		c.Send(protocol.Drain{Envelope: protocol.Typed(protocol.TypeDrain), ReconnectAfterMs: delays[i].Milliseconds()})
		c.closeAfterQueue(protocol.CloseShutdown)
	}
	done := make(chan struct{})
	go func() {
		s.mu.Lock()
		for len(s.conns) > 0 && ctx.Err() == nil {
			s.idle.Wait()
		}
		s.mu.Unlock()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.mu.Lock()
		s.idle.Broadcast()
		s.mu.Unlock()
	}
}
