package headless

import (
	"context"
	"encoding/json"
	"os"
	"strings"

	"github.com/tabrelay/tabrelay/protocol"
)

// Limits of the call bookkeeping.
const (
	// resultsKept bounds the finished calls whose results are kept in
	// memory for a redelivered id; older ones are read from the claims.
	resultsKept = 1000
	// maxCallID is the longest call id accepted (ids name claim files).
	maxCallID = 100
)

// Sentences of the results the tab makes itself.
const (
	sentenceBadID     = "This tab refuses a call id that cannot name a file; nothing was done."
	sentenceNoRecord  = "This tab could not record the call, so it did not run it; nothing was done."
	sentenceOtherTab  = "This call was started in another tab of this browser, which has not answered yet; read the history once it has."
	sentenceCancelled = "This call was stopped before it finished (cancelled, or its tab closed)."
)

// callState is a call this process has seen: running, or finished with
// its result kept for a redelivery of the same id.
type callState struct {
	cancel func()
	done   bool
	result protocol.TabResult
}

// outcome is how a call ended here.
type outcome struct {
	result protocol.TabResult
	send   bool // false when the relay no longer waits (cancelled)
	keep   bool // false when a redelivery should look again (another tab's claim)
}

// onCall starts call m, or answers a redelivered id from what is known:
// each call id runs at most once (SPEC §3).
func (t *Tab) onCall(m protocol.Call) {
	if m.ID == "" {
		t.log.Warn("call without an id ignored")
		return
	}
	if !validCallID(m.ID) {
		t.deliver(resultOf(m.ID, protocol.TabResult{Error: sentenceBadID}))
		return
	}
	t.mu.Lock()
	if st, ok := t.state[m.ID]; ok {
		done, res := st.done, st.result
		t.mu.Unlock()
		if done {
			t.deliver(resultOf(m.ID, res))
		} // still running: its result goes out on the socket current then
		return
	}
	ctx, cancel := context.WithCancel(t.runCtx)
	st := &callState{cancel: cancel}
	t.state[m.ID] = st
	t.calls.Add(1)
	t.mu.Unlock()
	go t.execute(ctx, st, m)
}

// validCallID reports whether id can name a claim file: at most maxCallID
// bytes, no path separator, no control character, no leading dot.
func validCallID(id string) bool {
	if id == "" || len(id) > maxCallID || id[0] == '.' {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x20 || c == 0x7f || c == '/' || c == '\\' {
			return false
		}
	}
	return true
}

func resultOf(id string, res protocol.TabResult) protocol.Result {
	b, err := json.Marshal(res) // fails only on data that is no JSON
	if err != nil {
		b, _ = json.Marshal(protocol.TabResult{Error: "The tab's result could not be encoded: " + err.Error()})
	}
	return protocol.Result{Envelope: protocol.Typed(protocol.TypeResult), ID: id, Result: b}
}

// onCancel stops a running call: the relay no longer waits for it.
func (t *Tab) onCancel(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st, ok := t.state[id]; ok && !st.done {
		st.cancel()
	}
}

// execute runs call m (or waits for the tab that claimed it) and answers.
func (t *Tab) execute(ctx context.Context, st *callState, m protocol.Call) {
	defer t.calls.Done()
	defer st.cancel()
	o := t.obtain(ctx, m)
	t.mu.Lock()
	if o.keep {
		st.done, st.result = true, o.result
		t.done = append(t.done, m.ID)
		if len(t.done) > resultsKept {
			delete(t.state, t.done[0])
			t.done = t.done[1:]
		}
	} else {
		delete(t.state, m.ID)
	}
	t.mu.Unlock()
	if o.send && ctx.Err() == nil {
		t.deliver(resultOf(m.ID, o.result))
	}
}

// obtain claims m's id for this browser and runs it, or, when another tab
// of the browser claimed it first, takes that tab's result.
func (t *Tab) obtain(ctx context.Context, m protocol.Call) outcome {
	if t.claims != nil {
		mine, err := t.claims.claim(m.ID)
		if err != nil {
			t.log.Error("call claim failed", "call", m.ID, "err", err)
			return outcome{result: protocol.TabResult{Error: sentenceNoRecord}, send: true}
		}
		if !mine {
			res, found := t.claims.await(ctx, m.ID, t.opts.ClaimWait)
			if !found {
				return outcome{result: protocol.TabResult{Error: sentenceOtherTab}, send: true}
			}
			return outcome{result: res, send: true, keep: true}
		}
	}
	t.recordExecution(m)
	res := t.runTool(ctx, m)
	sent := ctx.Err() == nil
	if !sent {
		res = protocol.TabResult{Error: sentenceCancelled}
	}
	if t.claims != nil {
		if err := t.claims.store(m.ID, res); err != nil {
			t.log.Error("call result not recorded", "call", m.ID, "err", err)
		}
	}
	return outcome{result: res, send: sent, keep: true}
}

// recordExecution counts one run of m, and appends it to the ExecLog.
func (t *Tab) recordExecution(m protocol.Call) {
	t.mu.Lock()
	t.execs[m.ID]++
	t.mu.Unlock()
	if t.opts.ExecLog == "" {
		return
	}
	tool := strings.Map(func(r rune) rune {
		if r <= ' ' || r == 0x7f {
			return '_'
		}
		return r
	}, m.Tool)
	f, err := os.OpenFile(t.opts.ExecLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err == nil {
		_, err = f.WriteString(m.ID + " " + tool + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		t.log.Error("exec log not written", "err", err)
	}
}
