package mcp

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/tabrelay/tabrelay/events"
	"github.com/tabrelay/tabrelay/internal/httpx"
	"github.com/tabrelay/tabrelay/protocol"
)

// A call in flight lives no longer than the grant it was made under (issue
// 23 §2: a delete_note waiting on the person's confirm card stayed after
// the person forgot its connection, and "Allow once" then ran it and the
// forgotten host got a success). While a call runs, its handler hears its
// browser's events (a connection forgotten, a scope written, a token
// revoked: here, or on another node through the Bus) and checks its token
// and the call's tool and action again at each, and at every keep-alive. Once they no longer hold,
// the call's context ends, so the pairing withdraws it from the tab (a
// cancel: the SDK takes its question to the person away), and whatever
// the tab answers after is refused: the host reads why instead.

// Why a call was withdrawn.
const (
	grantHolds = iota
	grantForgotten
	grantNarrowed
)

// grantWatch watches one call's grant while it runs: its browser's events
// reach it as a function of the hub's (no goroutine of its own), and its
// call's keep-alive checks again (recheck), should an event of another
// node's have been lost on its way here.
type grantWatch struct {
	s            *Server
	r            *http.Request
	ctx          context.Context
	tool, action string
	started      time.Time
	unsubscribe  func()
	cancel       context.CancelFunc

	mu   sync.Mutex // guards why, seen, changes
	why  int
	seen bool // an event of the browser came during the call
	// changes is a handshake-era call's stream, which hears of the
	// browser's list changes too (relayListChanges); nil: none.
	changes *stream
}

// watchGrant watches the grant of the call of tool and action (the
// request r's token), whose context is ctx: once the grant ends or stops
// allowing the call, cancel ends ctx.
func (s *Server) watchGrant(ctx context.Context, cancel context.CancelFunc, r *http.Request, pairing, tool, action string) *grantWatch {
	w := &grantWatch{s: s, r: r, ctx: ctx, tool: tool, action: action, started: time.Now(), cancel: cancel}
	w.unsubscribe = s.cfg.Events.Subscribe(pairing, w.heard)
	return w
}

// heard notes an event of the browser (in the deliverer's goroutine, which
// it must not hold up); one that may have changed the grant is checked.
func (w *grantWatch) heard(kind events.Kind) {
	grant := kind&(events.TokenRevoked|events.ConnectionsChanged) != 0
	w.mu.Lock()
	w.seen = w.seen || grant
	changes := w.changes
	w.mu.Unlock()
	if changes != nil {
		relayListChange(changes, kind)
	}
	if grant {
		go w.recheck()
	}
}

// recheck checks the grant again while the call runs (an event, the
// call's keep-alive).
func (w *grantWatch) recheck() {
	if w.ctx.Err() == nil {
		w.check(w.ctx)
	}
}

// everyKeepAlive rechecks the grant at each keep-alive of a call that has
// no event stream to beat them (a host that takes JSON only), until stop.
func (w *grantWatch) everyKeepAlive() (stop func()) {
	var mu sync.Mutex
	var t *time.Timer
	stopped := false
	var tick func()
	tick = func() {
		w.recheck()
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			t = time.AfterFunc(w.s.cfg.KeepAlive, tick)
		}
	}
	t = time.AfterFunc(w.s.cfg.KeepAlive, tick)
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		t.Stop()
	}
}

// check verifies the call's token and its tool and action again; once they
// no longer hold, the call's context ends.
func (w *grantWatch) check(ctx context.Context) int {
	why := grantHolds
	token, _ := httpx.Bearer(w.r)
	g, err := w.s.cfg.Verifier.Verify(context.WithoutCancel(ctx), token)
	switch {
	case errors.Is(err, protocol.ErrInvalidToken):
		why = grantForgotten
	case err == nil && !protocol.Allows(g.Scope, w.tool, w.action):
		why = grantNarrowed
	}
	if why != grantHolds {
		w.mu.Lock()
		if w.why == grantHolds {
			w.why = why
		}
		w.mu.Unlock()
		w.cancel()
	}
	return why
}

// withdrawn stops the watch once the call ended, and says whether its
// grant ended or narrowed meanwhile: checked once more when an event came
// (its check may still run), or the call lasted (a node of a cluster keeps
// a token check a second, and another node's event may not reach it).
func (w *grantWatch) withdrawn(ctx context.Context) int {
	w.unsubscribe()
	w.mu.Lock()
	why, seen := w.why, w.seen
	w.mu.Unlock()
	if why == grantHolds && (seen || time.Since(w.started) >= time.Second) {
		why = w.check(ctx)
	}
	return why
}

// withdrawal is what the host reads of a call withdrawn (why).
func (s *Server) withdrawal(why int, tool, action string) protocol.ToolResult {
	app := s.cfg.Bundle.App.Title
	text := "The person ended this connection in " + app + " while this call was in flight, so it was withdrawn from their tab " +
		"and whatever it did there is not reported. Nothing more can be done with this connection; the person can connect again."
	if why == grantNarrowed {
		text = s.refusal(tool, action) + " The person narrowed this connection in " + app + " while the call was in flight, " +
			"so it was withdrawn from their tab and whatever it did there is not reported."
	}
	return protocol.ToolResult{IsError: true, Content: []protocol.Content{{Type: "text", Text: text}}}
}
