package mcp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// stream is one SSE response: messages and keep-alive comments, written
// by one goroutine at a time, and never after stop. The keep-alive
// goroutine and a call's events callback outlive the handler that owns
// the response; one that writes after the handler returned writes into a
// buffer net/http has reset or handed to another response (issue 17: a
// nil pointer in bufio.(*Writer).Flush). So every write checks closed
// under the lock, and stop sets it under the lock.
//
// A lazy stream opens (its headers written) at its first message or when
// its wait is over, whichever comes first; until then the response is
// untouched, and sendLast leaves it to the handler to answer as JSON.
type stream struct {
	keepAlive time.Duration
	// beat, when set, writes the stream's keep-alive itself (a call's
	// progress heartbeat) and says so; false: the comment goes.
	beat   func(*stream) bool
	mu     sync.Mutex // guards the fields below
	w      http.ResponseWriter
	flush  http.Flusher
	opened bool        // the headers are written
	closed bool        // stop ran (the handler may have returned), or sendLast ended it
	wait   *time.Timer // opens a lazy stream when its call lasts
	tick   *time.Ticker
	done   chan struct{}
}

func newStream(w http.ResponseWriter, keepAlive time.Duration, beat func(*stream) bool) *stream {
	st := &stream{w: w, keepAlive: keepAlive, beat: beat, done: make(chan struct{})}
	st.mu.Lock()
	st.openLocked()
	st.mu.Unlock()
	return st
}

// newLazyStream is a stream that opens after wait, or at its first
// message; wait <= 0 opens it at once. beat: as stream.beat.
func newLazyStream(w http.ResponseWriter, keepAlive, wait time.Duration, beat func(*stream) bool) *stream {
	if wait <= 0 {
		return newStream(w, keepAlive, beat)
	}
	st := &stream{w: w, keepAlive: keepAlive, beat: beat, done: make(chan struct{})}
	st.wait = time.AfterFunc(wait, func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		st.openLocked()
	})
	return st
}

// openLocked writes the stream's headers and starts its keep-alives,
// unless it is open or closed already.
func (st *stream) openLocked() {
	if st.opened || st.closed {
		return
	}
	st.opened = true
	h := st.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // proxies must not hold the stream back
	st.w.WriteHeader(http.StatusOK)
	st.flush, _ = st.w.(http.Flusher)
	if st.flush != nil {
		st.flush.Flush()
	}
	st.tick = time.NewTicker(st.keepAlive)
	go st.keepAlives(st.tick)
}

func (st *stream) keepAlives(tick *time.Ticker) {
	for {
		select {
		case <-st.done:
			return
		case <-tick.C:
			if st.beat == nil || !st.beat(st) {
				st.write([]byte(": keep-alive\n\n"))
			}
		}
	}
}

// sendLast sends a call's answer on the stream if it opened, and nothing
// after it (a heartbeat or a tab's event that comes later is dropped:
// the host has forgotten the call's progress token); false: the stream
// never opened, and will not (the handler answers as JSON).
func (st *stream) sendLast(v any) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.opened {
		st.closed = true
		return false
	}
	st.writeLocked(message(v))
	st.closed = true
	return true
}

func (st *stream) send(v any) { st.write(message(v)) }

// message is v as an SSE message (nil: v does not marshal).
func message(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return fmt.Appendf(nil, "event: message\ndata: %s\n\n", data)
}

// write writes chunk and flushes it (opening the stream first), unless
// the stream was stopped.
func (st *stream) write(chunk []byte) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.writeLocked(chunk)
}

func (st *stream) writeLocked(chunk []byte) {
	if st.closed || chunk == nil {
		return
	}
	st.openLocked()
	_, _ = st.w.Write(chunk)
	if st.flush != nil {
		st.flush.Flush()
	}
}

// stop ends the stream before its handler returns: once it returned,
// nothing more is written to the response.
func (st *stream) stop() {
	st.mu.Lock()
	st.closed = true
	tick := st.tick
	st.mu.Unlock()
	if st.wait != nil {
		st.wait.Stop()
	}
	if tick != nil {
		tick.Stop()
	}
	close(st.done)
}
