// Package headless is a tab without a browser: a Go client of the relay's
// /tab WebSocket that speaks the protocol a browser tab speaks (SPEC §6)
// and runs the tools of the probe app, protocol.ProbeBundle(), made to
// probe a relay (or, with
// protocol.ConformanceBundle(), the MCP conformance suite's fixture tools).
// `tabrelay tab`, the tests and the load tests use it as the person's tab.
//
// It owns one tab's side of the protocol: the browser's secret file (made
// once, shared by every process that is a tab of the same browser), the
// hello, pongs, reconnects with full-jitter backoff or the drain delay
// (each on a new TCP connection), running each call id at most once — in
// this process and across the processes sharing the secret file — and
// sending every result on the socket that is current when it is ready. It
// never logs the secret or a tool's arguments, and holds no relay-side
// state.
package headless

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/tabrelay/tabrelay/protocol"
)

// Defaults of Options (SPEC §6: full jitter 0.5 s → 20 s, from the bottom
// after a welcomed socket ends).
const (
	DefaultMinBackoff = 500 * time.Millisecond
	DefaultMaxBackoff = 20 * time.Second
	DefaultClaimWait  = 5 * time.Second
	// stableAfter is how long a welcomed socket must stay up to count as a
	// good try when no drain ended it (docs/tab-protocol.md §15). It is
	// half the 20 s cap, the mean of a capped full-jitter wait: a relay
	// that closes tabs this long after their welcome gets no more
	// reconnects than one that refuses them outright.
	stableAfter = 10 * time.Second
)

// Options configure a Tab.
type Options struct {
	// Relay is the relay's base URL, http(s)://host:port: the socket is
	// <Relay>/tab with the scheme made ws or wss. A ws(s):// URL is used
	// as is.
	Relay string
	// SecretFile holds the browser's secret: 32 random bytes as unpadded
	// base64url text. It is made (0600) on first use; several processes
	// with the same file are several tabs of one browser, and share the
	// claims of the calls they run in <SecretFile>.calls/. Empty: a secret
	// in memory only, and no claims across processes.
	SecretFile string
	// Origin is sent as the Origin header; it must be one the relay allows.
	Origin string
	// Bundle is the catalogue the tab runs; nil is protocol.ProbeBundle().
	Bundle *protocol.Bundle
	// Name is this tab's name, which whoami answers; empty is random.
	Name string
	// Focus reports focus after each welcome, and counts the tab as
	// focused at each hello.
	Focus bool
	// AnswerAfter is how long the person takes to answer the question
	// clear_all asks; below zero they never answer (the question stays
	// open until the call is cancelled).
	AnswerAfter time.Duration
	// ExecLog, when set, gets one line "<callID> <tool>\n" appended per
	// tool actually run (one write per line, O_APPEND), so that tests can
	// prove across processes that no call ran twice.
	ExecLog string
	// ClaimWait is how long a tab waits for the result of a call another
	// tab of this browser claimed before answering that it has not
	// answered; 0 is DefaultClaimWait.
	ClaimWait time.Duration
	// Logger gets the tab's lines (never the secret, never arguments);
	// nil is slog.Default().
	Logger *slog.Logger
	// Dialer is the HTTP client of the WebSocket handshake; nil is one
	// over a clone of http.DefaultTransport. Its Transport, when nil or an
	// *http.Transport, is used as a clone without keep-alives, so that
	// every try opens a new TCP connection (a balancer can send it to
	// another node); another RoundTripper is used as it is, and must do
	// the same itself.
	Dialer *http.Client
	// MinBackoff and MaxBackoff bound the waits between reconnects; 0 is
	// DefaultMinBackoff and DefaultMaxBackoff.
	MinBackoff, MaxBackoff time.Duration
}

// Tab is one headless tab. Its methods are safe for concurrent use.
type Tab struct {
	opts   Options
	bundle *protocol.Bundle
	url    string
	secret string // never logged
	tabID  string
	name   string
	log    *slog.Logger
	claims *claimDir // nil without a secret file
	app    app
	jitter func(time.Duration) time.Duration          // rand in [0, d); replaced by tests
	sleep  func(context.Context, time.Duration) error // the waits between tries; replaced by tests
	now    func() time.Time                           // the clock of a socket's age; replaced by tests
	pause  time.Duration                              // between a fixture tool's messages; tests lengthen it

	running sync.Mutex // held by Run
	calls   sync.WaitGroup

	mu         sync.Mutex // guards the fields below
	sess       *session   // the current socket, nil between sockets
	flushing   bool       // sess still sends the outbox: deliver queues behind it
	connected  chan struct{}
	pairing    string
	focusedAt  int64
	reconnects int
	runCtx     context.Context // the context calls run under, while Run runs
	state      map[string]*callState
	done       []string // ids of finished calls, oldest first (bounded)
	outbox     []any    // messages waiting for the next socket (bounded)
	execs      map[string]int
}

// ErrOriginRefused is returned (wrapped) by Run when the relay answers the
// handshake with 403: it does not allow Options.Origin, and asking again
// would get the same answer.
var ErrOriginRefused = errors.New("headless: the relay refused the tab's origin (403); use one of its ALLOWED_ORIGINS")

// StopError is what Run returns when the relay closed the socket with a
// code of the stop range: reconnecting would get the same answer.
type StopError struct {
	Code   protocol.CloseCode
	Reason string
}

// Error names the code and its reason.
func (e *StopError) Error() string {
	return fmt.Sprintf("headless: the relay closed the tab with %d (%s); not reconnecting", int(e.Code), e.Reason)
}

// New checks opts and returns a tab; Run connects it. It reads or makes
// the secret file.
func New(opts Options) (*Tab, error) {
	wsURL, err := socketURL(opts.Relay)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(opts.Origin) == "" {
		return nil, errors.New("headless: an origin is required (one the relay allows)")
	}
	if opts.Bundle == nil {
		opts.Bundle = protocol.ProbeBundle()
	}
	setDefault(&opts.MinBackoff, DefaultMinBackoff)
	setDefault(&opts.MaxBackoff, DefaultMaxBackoff)
	setDefault(&opts.ClaimWait, DefaultClaimWait)
	opts.Dialer = freshDialer(opts.Dialer)
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	t := &Tab{opts: opts, bundle: opts.Bundle, url: wsURL, tabID: "t" + randomHex(12), name: opts.Name,
		connected: make(chan struct{}), state: map[string]*callState{}, execs: map[string]int{},
		jitter: func(d time.Duration) time.Duration { return mrand.N(d) }, sleep: sleep, now: time.Now, pause: fixtureStep}
	if t.name == "" {
		t.name = "tab-" + randomHex(4)
	}
	t.log = opts.Logger.With("tab", t.tabID)
	if opts.SecretFile == "" {
		t.secret = newSecret()
		return t, nil
	}
	if t.secret, err = loadOrCreateSecret(opts.SecretFile); err != nil {
		return nil, err
	}
	if t.claims, err = openClaimDir(opts.SecretFile + ".calls"); err != nil {
		return nil, err
	}
	return t, nil
}

func setDefault(d *time.Duration, v time.Duration) {
	if *d <= 0 {
		*d = v
	}
}

// socketURL returns the /tab WebSocket URL of a relay base URL.
func socketURL(relay string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(relay))
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("headless: the relay URL %q must look like https://relay.example.com", relay)
	}
	switch u.Scheme {
	case "ws", "wss":
		return u.String(), nil
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	default:
		return "", fmt.Errorf("headless: the relay URL %q must start with http://, https://, ws:// or wss://", relay)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/tab"
	return u.String(), nil
}

// Run connects the tab and keeps it connected: after a socket ends it
// waits the drain delay the relay asked for, or a full-jitter backoff, and
// connects again; a failed dial is retried the same way (retries.after
// says how the backoff grows). It returns ctx's error when ctx ends, a
// *StopError when the relay closed the socket with a stop code, and
// ErrOriginRefused (wrapped) when the relay refused the origin.
func (t *Tab) Run(ctx context.Context) error {
	if !t.running.TryLock() {
		return errors.New("headless: Run is running already")
	}
	defer t.running.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer t.calls.Wait() // after cancel: the calls end with ctx
	defer cancel()
	t.mu.Lock()
	t.runCtx = ctx
	t.mu.Unlock()
	if t.claims != nil {
		t.claims.prune(time.Now())
	}
	var tries retries
	for {
		end := t.connect(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if end.refused {
			return fmt.Errorf("%w: %s", ErrOriginRefused, t.opts.Origin)
		}
		if end.code.Stop() {
			t.log.Warn("relay stopped the tab", "code", int(end.code), "reason", end.reason)
			return &StopError{Code: end.code, Reason: end.reason}
		}
		wait := t.wait(&tries, end)
		t.log.Debug("tab reconnects", "code", int(end.code), "status", end.status, "after", wait)
		if err := t.sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// retries counts the failed tries that make the backoff grow
// (docs/tab-protocol.md §15, issue 17). A try is one dial and, when it was
// welcomed, the socket's life.
type retries struct {
	short  int // welcomed sockets in a row that ended early without a drain
	failed int // dials since the last welcome that got no welcome
}

// after counts how a try ended and returns n, the exponent of the next
// backoff. A welcomed socket that stayed up stableAfter, or that a drain
// ended, is a good try: n starts again from 0. One that ended earlier is a
// failed try that a welcome does not forget, so a relay that closes tabs
// right after their welcome meets growing waits. A dial without a welcome
// is a failed try until the next welcome: a node that refused the tab
// says nothing about the one that welcomed it.
func (r *retries) after(end sessionEnd) int {
	switch {
	case !end.welcomed:
		r.failed++
	case end.drain >= 0 || end.up >= stableAfter:
		r.short, r.failed = 0, 0
	default:
		r.short++
		r.failed = 0
	}
	return r.short + r.failed
}

// wait returns how long to wait after end before the next try: the
// drain's delay when a drain came, else the backoff, never less than a
// refusal's Retry-After (capped at MaxBackoff), and after a close whose
// reason says "retry in N s" (a new browser over its address's limit)
// those N seconds, at most maxRetryIn, plus the backoff
// (docs/tab-protocol.md §15).
func (t *Tab) wait(tries *retries, end sessionEnd) time.Duration {
	n := tries.after(end)
	if end.drain >= 0 {
		return end.drain
	}
	if told := protocol.RetryIn(end.reason); told > 0 {
		return min(told, maxRetryIn) + t.backoff(n)
	}
	return max(t.backoff(n), min(end.retryAfter, t.opts.MaxBackoff))
}

// maxRetryIn bounds the wait a close reason may ask for.
const maxRetryIn = time.Hour

// backoff returns the wait after n failed tries: full jitter, uniform in
// [0, min(MaxBackoff, MinBackoff·2ⁿ)).
func (t *Tab) backoff(n int) time.Duration {
	ceiling := t.opts.MaxBackoff
	if n < 40 && t.opts.MinBackoff<<n < ceiling && t.opts.MinBackoff<<n > 0 {
		ceiling = t.opts.MinBackoff << n
	}
	if ceiling <= 0 {
		return 0
	}
	return t.jitter(ceiling)
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// Focus reports that the person focused this tab now: a focus message on
// the current socket, and the time every later hello carries.
func (t *Tab) Focus() {
	at := time.Now().UnixMilli()
	t.mu.Lock()
	t.focusedAt = at
	s := t.sess
	t.mu.Unlock()
	if s != nil {
		_ = s.send(protocol.Focus{Envelope: protocol.Typed(protocol.TypeFocus), At: at})
	}
}

// Pairing returns the pairing id of the last welcome ("" before the first).
func (t *Tab) Pairing() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pairing
}

// Name returns the tab's name (the one whoami answers).
func (t *Tab) Name() string { return t.name }

// TabID returns the tab's id, the same in every hello of this Tab.
func (t *Tab) TabID() string { return t.tabID }

// Connected reports whether a socket is up and welcomed.
func (t *Tab) Connected() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sess != nil
}

// WaitConnected returns once a socket is up and welcomed, or ctx's error.
func (t *Tab) WaitConnected(ctx context.Context) error {
	for {
		t.mu.Lock()
		up, ch := t.sess != nil, t.connected
		t.mu.Unlock()
		if up {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

// Executions returns how many times this process ran each call id.
func (t *Tab) Executions() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]int, len(t.execs))
	for id, n := range t.execs {
		out[id] = n
	}
	return out
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}
