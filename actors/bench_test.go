package actors

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tabrelay/tabrelay/internal/clock"
	"github.com/tabrelay/tabrelay/protocol"
)

// echoTab answers every call at once, in process: what remains is the
// actors' own cost of a call (switchboard, pairing, tab, and back).
type echoTab struct {
	t   testing.TB
	tab *Tab
}

func (e *echoTab) SendHeld(msg protocol.ToTab) (func(bool), bool) { return nil, e.Send(msg) }

func (e *echoTab) Send(msg protocol.ToTab) bool {
	if c, ok := msg.(protocol.Call); ok {
		e.tab.Forward(resultOf(e.t, c.ID, protocol.TabResult{Data: c.Arguments}))
	}
	return true
}
func (e *echoTab) Close(protocol.CloseCode) {}

func benchRig(b *testing.B) *rig {
	r := newRig(b, func(c *Config) { c.Clock = clock.Real{}; c.MaxCalls = 1 << 20 })
	e := &echoTab{t: b}
	e.tab = r.hub.Accept(TabInfo{Pairing: "p1", TabID: "echo"}, e)
	for {
		if s, err := r.caller.Inspect(context.Background(), "p1"); err == nil && len(s.Tabs) == 1 {
			return r
		}
	}
}

func BenchmarkPairingCall(b *testing.B) {
	r := benchRig(b)
	req := protocol.CallRequest{Pairing: "p1", Tool: "echo", Arguments: json.RawMessage(`{"value":1}`)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if o := r.caller.Call(context.Background(), req, nil); o.Kind != protocol.Answered {
			b.Fatalf("outcome %v", o.Kind)
		}
	}
}

func BenchmarkPairingCallParallel(b *testing.B) {
	r := benchRig(b)
	req := protocol.CallRequest{Pairing: "p1", Tool: "echo", Arguments: json.RawMessage(`{"value":1}`)}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if o := r.caller.Call(context.Background(), req, nil); o.Kind != protocol.Answered && o.Kind != protocol.TooManyCalls {
				b.Fatalf("outcome %v", o.Kind)
			}
		}
	})
}
