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

// grantWatch watches one call's grant while it runs.
type grantWatch struct {
	s            *Server
	r            *http.Request
	tool, action string
	started      time.Time

	changes *events.Listener
	done    chan struct{} // closed when the call ended
	cancel  context.CancelFunc

	mu   sync.Mutex // guards why, seen
	why  int
	seen bool // an event of the browser came during the call
}

// watchGrant returns ctx, ended when the grant of the call of tool and
// action (the request r's token) ends or stops allowing it, and its watch.
func (s *Server) watchGrant(ctx context.Context, r *http.Request, pairing, tool, action string) (context.Context, *grantWatch) {
	ctx, cancel := context.WithCancel(ctx)
	w := &grantWatch{s: s, r: r, tool: tool, action: action, started: time.Now(), cancel: cancel, done: make(chan struct{})}
	w.changes = s.cfg.Events.Listen(pairing)
	go func() {
		// As a listen stream does: a check every keep-alive too, should an
		// event of another node's have been lost on its way here.
		recheck := time.NewTicker(s.cfg.KeepAlive)
		defer recheck.Stop()
		for {
			select {
			case <-w.done:
				return
			case <-ctx.Done():
				return
			case <-recheck.C:
				w.check(ctx)
			case <-w.changes.C():
				if w.heard(w.changes.Take()) {
					w.check(ctx)
				}
			}
		}
	}()
	return ctx, w
}

// heard notes an event of the browser; true when it may have changed
// the grant.
func (w *grantWatch) heard(kind events.Kind) bool {
	if kind&(events.TokenRevoked|events.ConnectionsChanged) == 0 {
		return false
	}
	w.mu.Lock()
	w.seen = true
	w.mu.Unlock()
	return true
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
// that the watch may not have read yet, or the call lasted (a node of a
// cluster keeps a token check a second, and another node's event may not
// reach it).
func (w *grantWatch) withdrawn(ctx context.Context) int {
	close(w.done)
	w.heard(w.changes.Take()) // delivered as the call ended, unread
	w.changes.Close()
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
