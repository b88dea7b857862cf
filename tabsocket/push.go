package tabsocket

// A browser's connections pushed to its tabs on this node (the events
// hub forwards each change of them here: node wires it).

import (
	"context"
	"encoding/json"
	"time"

	"github.com/tabrelay/tabrelay/protocol"
)

// PushConnections sends each proven socket of pairing on this node the
// browser's connections as they are now: a connections message without
// ref, so that an open Connections panel never goes stale (one tab
// approved, forgot or changed a scope; an admin changed one; a host derived
// one). A browser's pushes are at least PushGap apart: the first change
// is pushed at once, and every change during a push or the gap after it
// makes one more push when the gap is over. The last list sent is never
// older than the last change, and a burst of N changes over a time T
// costs at most 1 + T/PushGap pushes, not N (issue 23 §2: each exchange
// of a flood pushed the whole list, 1.03 MB at 4,970 rows, to every tab).
func (s *Server) PushConnections(pairing string) {
	if s.cfg.Connections == nil {
		return
	}
	s.mu.Lock()
	_, busy := s.pushes[pairing]
	s.pushes[pairing] = busy // a push running or its gap: one more after it
	s.mu.Unlock()
	if !busy {
		go s.push(pairing)
	}
}

// PushGap is the least time between two pushes of one browser's
// connections to this node's tabs.
const PushGap = 500 * time.Millisecond

// push sends the list once, then after PushGap once more if a change
// came meanwhile.
func (s *Server) push(pairing string) {
	if to := s.proven(pairing); len(to) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		list, err := s.cfg.Connections.Connections(ctx, pairing)
		cancel()
		if err != nil {
			s.cfg.Logger.Warn("connections not pushed to the tabs", "pairing", pairing, "err", err)
		} else {
			frame, _ := json.Marshal(protocol.Connections{Envelope: protocol.Typed(protocol.TypeConnections), Connections: list})
			for _, c := range s.proven(pairing) {
				c.sendFrame(frame)
			}
		}
	}
	s.cfg.Clock.AfterFunc(PushGap, func() {
		s.mu.Lock()
		again := s.pushes[pairing]
		if again {
			s.pushes[pairing] = false
		} else {
			delete(s.pushes, pairing)
		}
		s.mu.Unlock()
		if again {
			s.push(pairing)
		}
	})
}

// proven returns this node's proven sockets of pairing.
func (s *Server) proven(pairing string) []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	var to []*conn
	for c := range s.conns {
		if c.proven.Load() && c.pairing == pairing {
			to = append(to, c)
		}
	}
	return to
}
