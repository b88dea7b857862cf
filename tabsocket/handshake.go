package tabsocket

import (
	"net/http"
	"time"
)

// workerIdle is how long a handshake worker waits for the next upgrade
// before it ends.
const workerIdle = 2 * time.Second

// upgrade is a tab's request handed to a handshake worker; done is closed
// once the worker no longer uses w and r.
type upgrade struct {
	w    http.ResponseWriter
	r    *http.Request
	done chan struct{}
}

// handOff runs the handshake of r (Server.handshake) in a handshake
// worker, an idle one or a new one, and returns once the upgrade is
// answered. Workers live on while upgrades keep coming: their stacks grew
// once for the upgrade's deep calls (net/http's sort of the 101's header,
// the library's parsing of the request's), where the goroutine of each new
// connection grew its own anew, copying it twice (runtime.copystack: 5-9 %
// of the relay's CPU while new browsers are admitted, issue 13). There are
// never more workers than handshakes under way, which the gate bounds.
func (s *Server) handOff(w http.ResponseWriter, r *http.Request) {
	u := upgrade{w: w, r: r, done: make(chan struct{})}
	select {
	case s.upgrades <- u:
	default:
		go s.work(u)
	}
	<-u.done
}

// work runs u's handshake, then the next ones handed to it, until none
// came for workerIdle.
func (s *Server) work(u upgrade) {
	idle := time.NewTimer(workerIdle) // real time: it only frees the goroutine
	defer idle.Stop()
	for {
		s.handshake(u)
		idle.Reset(workerIdle)
		select {
		case u = <-s.upgrades:
		case <-idle.C:
			return
		}
	}
}
