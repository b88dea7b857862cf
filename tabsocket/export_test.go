package tabsocket

import "time"

// LastReads is when the server last read something from each of its
// sockets (on its clock): a test waits on it to know that a message
// nothing answers, a pong, was read.
func (s *Server) LastReads() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Time
	for c := range s.conns {
		out = append(out, time.Unix(0, c.lastRead.Load()))
	}
	return out
}

// DrainSpread is the time over which a drain of n tabs spreads their
// reconnects, within window.
var DrainSpread = drainSpread
