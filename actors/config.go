package actors

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"log/slog"
	"time"

	"github.com/tabrelay/tabrelay/internal/clock"
	tabpairing "github.com/tabrelay/tabrelay/pairing"
)

// Defaults of Config (SPEC §10).
const (
	DefaultCallWait     = 225 * time.Second // under Claude's 240 s
	DefaultTurnIdle     = 120 * time.Second
	DefaultPairingIdle  = 5 * time.Minute
	DefaultMaxTabs      = 32
	DefaultMaxCalls     = 64
	DefaultMaxPairings  = 100_000
	DefaultDetachedKept = 256
	DefaultTabGrace     = 5 * time.Second
	DefaultProbeEvery   = 2 * time.Second
	DefaultConfirmEvery = 20 * time.Second
	// DefaultPermissionsWait bounds how long a tool list waits for the
	// tab's permissions (SPEC §4: a short timeout, then the bundled
	// catalogue).
	DefaultPermissionsWait = 1500 * time.Millisecond
)

// Config is what pairing actors and tabs need to know.
type Config struct {
	CallWait    time.Duration // TAB_CALL_WAIT
	TurnIdle    time.Duration // AGENT_TURN_IDLE
	PairingIdle time.Duration // a pairing with no tab and no call stops after this
	MaxTabs     int           // tabs per pairing
	MaxCalls    int           // calls in flight per pairing
	MaxPairings int           // pairing actors active on one node
	// DetachedKept bounds how many detached call ids a pairing remembers so
	// that their late answers are counted as late rather than unknown.
	DetachedKept int
	// TabGrace is how long a call waits for a tab when the browser's last
	// tab went away moments ago (a reload, a network blip, a node's drain:
	// tabs reconnect by themselves). Past it, or with no tab lately, a call
	// is answered at once that no tab is open.
	TabGrace time.Duration
	// RebuildGrace is the same wait for a pairing rebuilt after its actor
	// went away (its node drained or died): its tabs come back spread over
	// the drain window. Default TabGrace.
	RebuildGrace time.Duration
	// Drained is where a pairing reads whether a node drained its
	// browser's tabs and until when they are expected back
	// (pairing.Store's marks, pairing_drained.go); nil: it knows only
	// what it saw itself.
	Drained DrainMarks
	// ProbeEvery is how often a waiter asks its pairing whether it still
	// holds the call: it guards against lost messages, not a rule of the
	// call. It runs on Clock, as every timer of the actors does (a test's
	// fake clock fires it only when the test moves the clock).
	ProbeEvery time.Duration
	// ConfirmEvery is how often the node confirms the registrations of its
	// tabs with pairings on other nodes, in one message per node
	// (confirms.go; on Clock too, for the same reason).
	ConfirmEvery time.Duration
	// PermissionsWait bounds how long Caller.Permissions waits for a tab.
	PermissionsWait time.Duration
	// Clock is what every timer and time of the actors reads (default the
	// real one).
	Clock   clock.Clock
	Logger  *slog.Logger
	Metrics *Metrics

	// confirmLocal confirms registrations with pairings in this process
	// too: tests of one process stand such a pairing in for one on
	// another node.
	confirmLocal bool
}

// DrainMarks reads the marks draining nodes keep of the browsers whose
// tabs they told to reconnect (pairing.Store's Drained).
type DrainMarks interface {
	Drained(ctx context.Context, id string, now time.Time) (d tabpairing.Drained, found bool, err error)
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.CallWait, DefaultCallWait)
	def(&c.TurnIdle, DefaultTurnIdle)
	def(&c.PairingIdle, DefaultPairingIdle)
	def(&c.TabGrace, DefaultTabGrace)
	def(&c.RebuildGrace, c.TabGrace)
	def(&c.ProbeEvery, DefaultProbeEvery)
	def(&c.ConfirmEvery, DefaultConfirmEvery)
	def(&c.PermissionsWait, DefaultPermissionsWait)
	if c.MaxTabs <= 0 {
		c.MaxTabs = DefaultMaxTabs
	}
	if c.MaxCalls <= 0 {
		c.MaxCalls = DefaultMaxCalls
	}
	if c.MaxPairings <= 0 {
		c.MaxPairings = DefaultMaxPairings
	}
	if c.DetachedKept <= 0 {
		c.DetachedKept = DefaultDetachedKept
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Metrics == nil {
		c.Metrics = NewMetrics(nil)
	}
	return c
}

// NewID returns a random id with a prefix: 80 bits, lowercase base32
// (16 characters). It allocates the string only (every call makes ids).
func NewID(prefix string) string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	var buf [32]byte
	return string(lowerBase32.AppendEncode(append(buf[:0], prefix...), b[:]))
}

var lowerBase32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)
