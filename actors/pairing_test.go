package actors

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/internal/syncbuf"
	"github.com/tabrelay/tabrelay/internal/testwait"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tabrelay/tabrelay/actors/wire"
	"github.com/tabrelay/tabrelay/internal/clock"
	"github.com/tabrelay/tabrelay/protocol"
	"google.golang.org/protobuf/proto"
)

// patience bounds how long a test waits for an actor message that must
// come; it is never how long a rule takes (the rules run on the fake clock).
const patience = 30 * time.Second

var epoch = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

type rig struct {
	t      testing.TB
	clock  *clock.Fake
	caller *Caller
	hub    *Hub
	cfg    Config
	system *actor.ActorSystem
}

func newRig(t testing.TB, tweak func(*Config)) *rig {
	t.Helper()
	system := NewSystem(slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(system.Shutdown)
	cfg := Config{Clock: clock.NewFake(epoch), Metrics: NewMetrics(nil)}
	if tweak != nil {
		tweak(&cfg)
	}
	cfg = cfg.withDefaults()
	router := NewLocalRouter(system, cfg)
	fake, _ := cfg.Clock.(*clock.Fake)
	return &rig{t: t, clock: fake, cfg: cfg, system: system,
		caller: NewCaller(system, router, cfg), hub: NewHub(system, router, cfg)}
}

// testTab is an in-process tab endpoint: the Outbox a socket would be.
type testTab struct {
	t      testing.TB
	id     string
	in     chan any
	closed chan protocol.CloseCode
	tab    *Tab
}

func (tt *testTab) Send(msg protocol.ToTab) bool { tt.in <- msg; return true }

func (tt *testTab) SendHeld(msg protocol.ToTab) (func(bool), bool) { return nil, tt.Send(msg) }

func (tt *testTab) Close(code protocol.CloseCode) {
	select {
	case tt.closed <- code:
	default:
	}
}

// connect adds a tab to pairing and waits until the pairing holds it.
func (r *rig) connect(pairing, tabID string, focusedAt time.Time) *testTab {
	r.t.Helper()
	tt := &testTab{t: r.t, id: tabID, in: make(chan any, 64), closed: make(chan protocol.CloseCode, 1)}
	before := len(r.inspect(pairing).Tabs)
	tt.tab = r.hub.Accept(TabInfo{Pairing: pairing, TabID: tabID, FocusedAt: focusedAt}, tt)
	r.eventually(func() bool { return len(r.inspect(pairing).Tabs) == before+1 }, "tab %s registers", tabID)
	return tt
}

// refused accepts a tab that its pairing (or the node) must turn away,
// and waits for its socket to be closed with want.
func (r *rig) refused(pairing, tabID string, want protocol.CloseCode) {
	r.t.Helper()
	tt := &testTab{t: r.t, id: tabID, in: make(chan any, 8), closed: make(chan protocol.CloseCode, 1)}
	tt.tab = r.hub.Accept(TabInfo{Pairing: pairing, TabID: tabID}, tt)
	select {
	case code := <-tt.closed:
		if code != want {
			r.t.Fatalf("tab %s closed with %v, want %v", tabID, code, want)
		}
	case <-time.After(patience):
		r.t.Fatalf("tab %s was kept, want it closed with %v", tabID, want)
	}
}

func (r *rig) inspect(pairing string) *Snapshot {
	r.t.Helper()
	s, err := r.caller.Inspect(context.Background(), pairing)
	if err != nil {
		r.t.Fatalf("inspect: %v", err)
	}
	return s
}

func (r *rig) eventually(cond func() bool, what string, args ...any) {
	r.t.Helper()
	testwait.Eventually(r.t, cond, what, args...)
}

type pending struct {
	done   chan protocol.Outcome
	events chan protocol.CallEvent
	cancel context.CancelFunc
}

// call starts a call of connection conn and returns where its end arrives.
func (r *rig) call(pairing, conn, tool string) *pending {
	ctx, cancel := context.WithCancel(context.Background())
	p := &pending{done: make(chan protocol.Outcome, 1), events: make(chan protocol.CallEvent, 8), cancel: cancel}
	go func() {
		o := r.caller.Call(ctx, protocol.CallRequest{Pairing: pairing, Tool: tool, Arguments: json.RawMessage(`{}`),
			Connection: protocol.Connection{ID: conn, Kind: "connector", Client: "Test", Host: "example.com"}},
			func(e protocol.CallEvent) { p.events <- e })
		p.done <- o
	}()
	return p
}

func (p *pending) outcome(t *testing.T) protocol.Outcome {
	t.Helper()
	select {
	case o := <-p.done:
		return o
	case <-time.After(patience):
		t.Fatal("the call did not end")
		return protocol.Outcome{}
	}
}

func (tt *testTab) nextCall() protocol.Call {
	tt.t.Helper()
	for {
		select {
		case m := <-tt.in:
			if c, ok := m.(protocol.Call); ok {
				return c
			}
		case <-time.After(patience):
			tt.t.Fatalf("tab %s got no call", tt.id)
		}
	}
}

func (tt *testTab) nextCancel() protocol.Cancel {
	tt.t.Helper()
	select {
	case m := <-tt.in:
		c, ok := m.(protocol.Cancel)
		if !ok {
			tt.t.Fatalf("tab %s got %T, want a cancel", tt.id, m)
		}
		return c
	case <-time.After(patience):
		tt.t.Fatalf("tab %s got no cancel", tt.id)
	}
	return protocol.Cancel{}
}

// nothingQueued fails, with format and args (the last verb is for the
// message), if the tab has a message waiting.
func (tt *testTab) nothingQueued(format string, args ...any) {
	tt.t.Helper()
	select {
	case m := <-tt.in:
		tt.t.Fatalf(format, append(args, m)...)
	default:
	}
}

func (tt *testTab) answer(id, text string) {
	data, _ := json.Marshal(map[string]string{"text": text})
	tt.tab.Forward(resultOf(tt.t, id, protocol.TabResult{Data: data}))
}

func answerText(t *testing.T, o protocol.Outcome) string {
	t.Helper()
	if o.Kind != protocol.Answered {
		t.Fatalf("outcome %v, want answered", o.Kind)
	}
	var v map[string]string
	if err := json.Unmarshal(o.Result.Data, &v); err != nil {
		t.Fatal(err)
	}
	return v["text"]
}

func TestNoTabIsAnsweredAtOnce(t *testing.T) {
	r := newRig(t, nil)
	o := r.call("p1", "c1", "whoami").outcome(t)
	if o.Kind != protocol.NoTab {
		t.Fatalf("outcome %v, want no_tab", o.Kind)
	}
	if s := o.Sentence("Demo", ""); s == "" {
		t.Fatal("no sentence for no_tab")
	}
	if n := r.clock.Pending(); n != 1 { // only the idle timer: nothing waits for a tab
		t.Fatalf("%d timers pending, want just the idle one", n)
	}
}

func TestCallGoesToTabFocusedLastAndFallsBack(t *testing.T) {
	r := newRig(t, nil)
	a := r.connect("p1", "tab-a", epoch.Add(-2*time.Minute))
	b := r.connect("p1", "tab-b", epoch.Add(-time.Minute))

	p := r.call("p1", "c1", "whoami")
	b.answer(b.nextCall().ID, "b")
	if got := answerText(t, p.outcome(t)); got != "b" {
		t.Fatalf("answered by %s, want b (focused last)", got)
	}

	a.tab.Focus(epoch)
	r.eventually(func() bool { return r.inspect("p1").Tabs[0] == "tab-a" }, "tab a first after its focus")
	p = r.call("p1", "c1", "whoami")
	a.answer(a.nextCall().ID, "a")
	if got := answerText(t, p.outcome(t)); got != "a" {
		t.Fatalf("answered by %s, want a", got)
	}

	a.tab.Close()
	r.eventually(func() bool { return len(r.inspect("p1").Tabs) == 1 }, "tab a gone")
	p = r.call("p1", "c1", "whoami")
	b.answer(b.nextCall().ID, "b")
	if got := answerText(t, p.outcome(t)); got != "b" {
		t.Fatalf("answered by %s, want b (the tab focused before)", got)
	}
}

func TestCallsInFlightAreRedeliveredWithTheSameID(t *testing.T) {
	t.Run("to the same tab when it reconnects", func(t *testing.T) {
		r := newRig(t, nil)
		a := r.connect("p1", "tab-a", epoch)
		p := r.call("p1", "c1", "counter")
		first := a.nextCall()
		a.tab.Close()
		r.eventually(func() bool { return r.inspect("p1").Pending == 1 }, "call waits for a tab")

		a2 := r.connect("p1", "tab-a", epoch)
		again := a2.nextCall()
		if again.ID != first.ID || again.Redelivery != 1 || again.Turn != first.Turn {
			t.Fatalf("redelivered %+v, want id %s turn %s redelivery 1", again, first.ID, first.Turn)
		}
		a2.answer(again.ID, "once")
		if got := answerText(t, p.outcome(t)); got != "once" {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("to the tab focused before when another tab is there", func(t *testing.T) {
		r := newRig(t, nil)
		a := r.connect("p1", "tab-a", epoch.Add(-time.Minute))
		b := r.connect("p1", "tab-b", epoch)
		p := r.call("p1", "c1", "counter")
		first := b.nextCall()
		b.tab.Close()
		again := a.nextCall()
		if again.ID != first.ID || again.Redelivery != 1 {
			t.Fatalf("redelivered %+v, want id %s redelivery 1", again, first.ID)
		}
		a.answer(again.ID, "a")
		if got := answerText(t, p.outcome(t)); got != "a" {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("an answer on another socket reaches the waiter", func(t *testing.T) {
		r := newRig(t, nil)
		a := r.connect("p1", "tab-a", epoch)
		b := r.connect("p1", "tab-b", epoch.Add(-time.Minute))
		p := r.call("p1", "c1", "counter")
		c := a.nextCall()
		b.answer(c.ID, "from b's socket")
		if got := answerText(t, p.outcome(t)); got != "from b's socket" {
			t.Fatalf("got %q", got)
		}
	})
}

func TestWaitEndsInDetachWhileAskingAndTimeoutOtherwise(t *testing.T) {
	r := newRig(t, func(c *Config) { c.CallWait = 225 * time.Second })
	a := r.connect("p1", "tab-a", epoch)

	asked := r.call("p1", "c1", "clear_all")
	c := a.nextCall()
	a.tab.Forward(protocol.Asking{Envelope: protocol.Typed(protocol.TypeAsking), ID: c.ID})
	select {
	case e := <-asked.events:
		if e.Kind != protocol.CallAsking || e.CallID != c.ID {
			t.Fatalf("event %+v", e)
		}
	case <-time.After(patience):
		t.Fatal("asking did not reach the waiter")
	}
	plain := r.call("p1", "c1", "wait")
	c2 := a.nextCall()

	r.clock.Advance(224 * time.Second)
	select {
	case o := <-asked.done:
		t.Fatalf("ended before the wait: %v", o.Kind)
	default:
	}
	r.clock.Advance(time.Second)
	if o := asked.outcome(t); o.Kind != protocol.Detached || o.Sentence("Demo", "") != protocol.DetachSentence("") {
		t.Fatalf("outcome %v, want detached", o.Kind)
	}
	if o := plain.outcome(t); o.Kind != protocol.TimedOut || o.Wait != 225*time.Second {
		t.Fatalf("outcome %v (wait %v), want timeout after 225s", o.Kind, o.Wait)
	}
	if cancel := a.nextCancel(); cancel.ID != c2.ID || cancel.Reason != "timeout" {
		t.Fatalf("cancel %+v: want the timed-out call's, and none for the detached one", cancel)
	}

	a.answer(c.ID, "too late")
	r.eventually(func() bool { return testutil.ToFloat64(r.cfg.Metrics.LateAnswers) == 1 }, "late answer counted")
	if got := testutil.ToFloat64(r.cfg.Metrics.Detaches); got != 1 {
		t.Fatalf("detaches = %v", got)
	}
}

// TestTurns: SPEC §1 and seed 000: calls of one connection share a turn
// until somebody else makes a step in the tab (the person, or another
// connection's call that changed something: the tab reports its step), or
// the connection has been idle for AGENT_TURN_IDLE since its last call
// ended. Another connection's calls that change nothing do not end it.
func TestTurns(t *testing.T) {
	r := newRig(t, func(c *Config) { c.TurnIdle = 120 * time.Second })
	a := r.connect("p1", "tab-a", epoch)
	turnOf := func(conn string) string {
		t.Helper()
		p := r.call("p1", conn, "counter")
		c := a.nextCall()
		a.answer(c.ID, "")
		o := p.outcome(t)
		if o.Turn != c.Turn {
			t.Fatalf("outcome turn %s, call turn %s", o.Turn, c.Turn)
		}
		return c.Turn
	}
	t1 := turnOf("x")
	if turnOf("x") != t1 {
		t.Fatal("calls of one connection do not share a turn")
	}
	r.clock.Advance(119 * time.Second)
	if turnOf("x") != t1 {
		t.Fatal("the turn ended before AGENT_TURN_IDLE")
	}
	t2 := turnOf("y")
	if t2 == t1 {
		t.Fatal("another connection shares the turn")
	}
	if turnOf("x") != t1 {
		t.Fatal("a call of another connection that changed nothing ended x's turn")
	}
	if turnOf("y") != t2 {
		t.Fatal("x's call ended y's turn")
	}
	a.tab.Forward(protocol.Step{Envelope: protocol.Typed(protocol.TypeStep), By: "y"}) // y's call changed something
	r.inspect("p1")
	if turnOf("y") != t2 {
		t.Fatal("the connection's own step ended its turn")
	}
	t3 := turnOf("x")
	if t3 == t1 {
		t.Fatal("a step of another connection did not end x's turn")
	}
	a.tab.Forward(protocol.Step{Envelope: protocol.Typed(protocol.TypeStep), By: protocol.StepByPerson})
	r.eventually(func() bool { return r.inspect("p1").TurnConn == "" }, "the person's step ends the turns")
	t4 := turnOf("x")
	if t4 == t3 {
		t.Fatal("the person's step did not end the turn")
	}
	r.clock.Advance(120 * time.Second)
	if turnOf("x") == t4 {
		t.Fatal("the turn outlived AGENT_TURN_IDLE")
	}
}

// TestTurnIdlenessCountsFromTheEndOfTheLastCall: a call that runs longer
// than AGENT_TURN_IDLE (the person is asked) does not end its turn; the
// next call right after it, or meanwhile, shares it.
func TestTurnIdlenessCountsFromTheEndOfTheLastCall(t *testing.T) {
	r := newRig(t, func(c *Config) { c.TurnIdle = 120 * time.Second })
	a := r.connect("p1", "tab-a", epoch)
	long := r.call("p1", "x", "clear_all")
	c1 := a.nextCall()
	r.clock.Advance(150 * time.Second)
	during := r.call("p1", "x", "counter")
	c2 := a.nextCall()
	if c2.Turn != c1.Turn {
		t.Fatal("a call while the turn's call is in flight started a new turn")
	}
	a.answer(c2.ID, "")
	during.outcome(t)
	r.clock.Advance(50 * time.Second) // 200 s since the long call started
	a.answer(c1.ID, "")
	long.outcome(t)
	r.clock.Advance(119 * time.Second)
	next := r.call("p1", "x", "counter")
	c3 := a.nextCall()
	if c3.Turn != c1.Turn {
		t.Fatal("the turn ended though its last call ended less than AGENT_TURN_IDLE ago")
	}
	a.answer(c3.ID, "")
	next.outcome(t)
	r.clock.Advance(120 * time.Second)
	later := r.call("p1", "x", "counter")
	if c4 := a.nextCall(); c4.Turn == c1.Turn {
		t.Fatal("the turn outlived AGENT_TURN_IDLE after its last call ended")
	}
	later.cancel()
}

func TestLimits(t *testing.T) {
	t.Run("calls in flight", func(t *testing.T) {
		r := newRig(t, func(c *Config) { c.MaxCalls = 2 })
		a := r.connect("p1", "tab-a", epoch)
		r.call("p1", "c1", "wait")
		r.call("p1", "c1", "wait")
		a.nextCall()
		a.nextCall()
		o := r.call("p1", "c1", "wait").outcome(t)
		if o.Kind != protocol.TooManyCalls || o.Limit != 2 {
			t.Fatalf("outcome %v limit %d", o.Kind, o.Limit)
		}
	})
	t.Run("tabs per pairing", func(t *testing.T) {
		r := newRig(t, func(c *Config) { c.MaxTabs = 1 })
		r.connect("p1", "tab-a", epoch)
		r.refused("p1", "tab-b", protocol.CloseTooManyTabs)
	})
}

func TestPairingsPerNode(t *testing.T) {
	r := newRig(t, func(c *Config) { c.MaxPairings = 1 })
	r.connect("p1", "tab-a", epoch)
	if o := r.call("p2", "c1", "whoami").outcome(t); o.Kind != protocol.Restarting {
		t.Fatalf("a pairing over the node's limit: %v", o.Kind)
	}
	r.refused("p3", "tab-b", protocol.CloseUnavailable)
}

func TestIdlePairingPassivatesAndComesBack(t *testing.T) {
	r := newRig(t, func(c *Config) { c.PairingIdle = time.Minute })
	a := r.connect("p1", "tab-a", epoch)
	if got := testutil.ToFloat64(r.cfg.Metrics.PairingsActive); got != 1 {
		t.Fatalf("pairings active = %v", got)
	}
	r.clock.Advance(time.Hour)
	if got := testutil.ToFloat64(r.cfg.Metrics.PairingsActive); got != 1 {
		t.Fatal("a pairing with a tab passivated")
	}
	a.tab.Close()
	// The snapshot is answered after the pairing handled the tab's end
	// (and armed its idle timer): the gauge alone could be seen earlier.
	r.eventually(func() bool { return len(r.inspect("p1").Tabs) == 0 }, "tab gone")
	r.clock.Advance(time.Minute)
	r.eventually(func() bool { return testutil.ToFloat64(r.cfg.Metrics.PairingsActive) == 0 }, "pairing passivates")
	if o := r.call("p1", "c1", "whoami").outcome(t); o.Kind != protocol.NoTab {
		t.Fatalf("after passivation: %v", o.Kind)
	}
}

func TestPairingRebuildsFromItsTabs(t *testing.T) {
	r := newRig(t, nil)
	a := r.connect("p1", "tab-a", epoch)
	r.connect("p1", "tab-b", epoch.Add(-time.Minute))
	p := r.call("p1", "c1", "wait")
	a.nextCall()

	pid, _ := r.caller.router.Pairing(context.Background(), "p1", nil)
	r.system.Root.Stop(pid) // as if its node died
	if o := p.outcome(t); o.Kind != protocol.Restarting {
		t.Fatalf("call in flight ended %v, want restarting", o.Kind)
	}
	r.eventually(func() bool {
		s := r.inspect("p1")
		return len(s.Tabs) == 2 && s.Tabs[0] == "tab-a"
	}, "tabs re-register in their focus order")
	p = r.call("p1", "c1", "whoami")
	a.answer(a.nextCall().ID, "a")
	if got := answerText(t, p.outcome(t)); got != "a" {
		t.Fatalf("answered by %s after the rebuild, want a", got)
	}
}

func TestCancelledCallTellsTheTab(t *testing.T) {
	r := newRig(t, nil)
	a := r.connect("p1", "tab-a", epoch)
	p := r.call("p1", "c1", "wait")
	c := a.nextCall()
	p.cancel()
	if cancel := a.nextCancel(); cancel.ID != c.ID || cancel.Reason != "cancelled" {
		t.Fatalf("cancel %+v", cancel)
	}
	if o := p.outcome(t); o.Kind != protocol.Cancelled {
		t.Fatalf("outcome %v", o.Kind)
	}
	r.eventually(func() bool { return r.inspect("p1").Calls == 0 }, "call forgotten")
}

func TestAResultSentJustBeforeTheTabClosesCounts(t *testing.T) {
	for i := 0; i < 50; i++ {
		r := newRig(t, nil)
		a := r.connect("p1", "tab-a", epoch)
		b := r.connect("p1", "tab-b", epoch.Add(-time.Minute))
		p := r.call("p1", "c1", "counter")
		c := a.nextCall()
		a.answer(c.ID, "a")
		a.tab.Close()
		if got := answerText(t, p.outcome(t)); got != "a" {
			t.Fatalf("round %d: got %q", i, got)
		}
		b.nothingQueued("round %d: tab b got %v: the answered call was sent again", i)
	}
}

func TestAReconnectingTabGetsItsOwnCallsBack(t *testing.T) {
	r := newRig(t, nil)
	a := r.connect("p1", "tab-a", epoch)
	b := r.connect("p1", "tab-b", epoch.Add(-time.Minute))
	p := r.call("p1", "c1", "counter")
	first := a.nextCall()
	// Tab a's new socket registers before its old one is known to be gone.
	a2 := &testTab{t: t, id: "tab-a", in: make(chan any, 8), closed: make(chan protocol.CloseCode, 1)}
	a2.tab = r.hub.Accept(TabInfo{Pairing: "p1", TabID: "tab-a", FocusedAt: epoch}, a2)
	again := a2.nextCall()
	if again.ID != first.ID {
		t.Fatalf("tab a's new socket got %s, want %s", again.ID, first.ID)
	}
	select {
	case code := <-a.closed:
		if code != protocol.CloseReplaced {
			t.Fatalf("old socket closed with %v", code)
		}
	case <-time.After(patience):
		t.Fatal("the old socket was not told it was replaced")
	}
	a2.answer(again.ID, "a again")
	if got := answerText(t, p.outcome(t)); got != "a again" {
		t.Fatalf("got %q", got)
	}
	b.nothingQueued("tab b got %v: another tab's call")
}

func TestDeadLettersLogNoMessageContent(t *testing.T) {
	var logs syncbuf.Buffer
	system := NewSystem(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer system.Shutdown()
	pid := system.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	if err := system.Root.StopFuture(pid).Wait(); err != nil { // stopped: what comes now is a dead letter
		t.Fatal(err)
	}
	system.Root.Send(pid, &wire.CallRequest{Id: "c1", Arguments: json.RawMessage(`{"password":"hunter2"}`)})
	r := &rig{t: t}
	r.eventually(func() bool { return strings.Contains(logs.String(), "DeadLetter") }, "a dead letter logged")
	if strings.Contains(logs.String(), "hunter2") {
		t.Fatalf("a dead letter logged its message:\n%s", logs.String())
	}
}

func TestPermissionsAreAskedOfTheTabFocusedLast(t *testing.T) {
	r := newRig(t, nil)
	conn := protocol.Connection{ID: "c1"}
	if _, ok := r.caller.permissions(context.Background(), "p1", conn, []string{"whoami"}, patience); ok {
		t.Fatal("answered without a tab")
	}
	r.connect("p1", "tab-a", epoch.Add(-time.Minute))
	b := r.connect("p1", "tab-b", epoch)
	go func() {
		for m := range b.in {
			if q, ok := m.(protocol.PermissionsQuery); ok && q.Connection.ID == "c1" {
				b.tab.Forward(protocol.Permissions{Envelope: protocol.Typed(protocol.TypePermissions), ID: q.ID, Tools: map[string]string{"whoami": protocol.PermissionRuns}})
				return
			}
		}
	}()
	got, ok := r.caller.permissions(context.Background(), "p1", conn, []string{"whoami"}, patience)
	if !ok || got["whoami"] != protocol.PermissionRuns {
		t.Fatalf("permissions %v %v", got, ok)
	}
	// The same question again is answered from the tab's answer (issue 23
	// §2), which the tab (it answers once) does not answer twice.
	if got, ok := r.caller.permissions(context.Background(), "p1", conn, []string{"whoami"}, patience); !ok || got["whoami"] != protocol.PermissionRuns {
		t.Fatalf("the same question again: %v %v", got, ok)
	}
	if _, ok := r.caller.permissions(context.Background(), "p1", conn, []string{"whoami", "counter"}, 50*time.Millisecond); ok {
		t.Fatal("a tab that does not answer was taken as an answer")
	}
}

// TestACallWaitsForATabThatWentAwayLately: the browser's last tab went
// away moments ago (a reload, a node's drain): a call waits for it to come
// back instead of hearing that no tab is open, and does hear so once the
// grace ran out.
func TestACallWaitsForATabThatWentAwayLately(t *testing.T) {
	r := newRig(t, nil)
	a := r.connect("p1", "tab-a", epoch)
	a.tab.Close()
	r.eventually(func() bool { return len(r.inspect("p1").Tabs) == 0 }, "tab gone")

	waiting := r.call("p1", "c1", "whoami")
	r.eventually(func() bool { return r.inspect("p1").Pending == 1 }, "the call waits for a tab")
	back := r.connect("p1", "tab-a", epoch) // the tab reconnected
	c := back.nextCall()
	back.tab.Forward(protocol.Result{Envelope: protocol.Typed(protocol.TypeResult), ID: c.ID, Result: json.RawMessage(`{"data":{"tab":"a"}}`)})
	if o := waiting.outcome(t); o.Kind != protocol.Answered {
		t.Fatalf("the call that waited ended %v", o.Kind)
	}

	back.tab.Close()
	r.eventually(func() bool { return len(r.inspect("p1").Tabs) == 0 }, "tab gone again")
	late := r.call("p1", "c1", "whoami")
	r.eventually(func() bool { return r.inspect("p1").Pending == 1 }, "the call waits for a tab")
	r.clock.Advance(DefaultTabGrace)
	if o := late.outcome(t); o.Kind != protocol.NoTab {
		t.Fatalf("after the grace: %v, want no_tab", o.Kind)
	}
	if o := r.call("p1", "c1", "whoami").outcome(t); o.Kind != protocol.NoTab {
		t.Fatalf("a call after the grace: %v, want no_tab at once", o.Kind)
	}
}

// lossyPairing answers every probe that it does not hold the call. With
// accepts, it takes calls and loses their ends: what a broken connection
// between two nodes does to a call. Without, it has not got the call
// yet (a moved pairing forwards it).
type lossyPairing struct{ accepts bool }

func (l lossyPairing) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *callRequest: // a pairing of this process is sent the call as it is
		if l.accepts {
			ctx.Send(ctx.Sender(), &wire.CallAccepted{Id: m.id})
		}
	case *wire.CallProbe:
		ctx.Respond(&wire.CallProbeReply{Id: m.GetId(), Held: false})
	}
}

type fixedRouter struct{ pid *actor.PID }

func (f fixedRouter) Pairing(context.Context, string, *actor.PID) (*actor.PID, error) {
	return f.pid, nil
}

// TestAWaiterWhoseCallWasLostIsNotLeftHanging: the pairing took the call
// and then does not hold it any more (its end was lost on the way): the
// waiter's probe finds out, and the host hears the restarting sentence.
func TestAWaiterWhoseCallWasLostIsNotLeftHanging(t *testing.T) {
	r := newRig(t, nil)
	lossy := r.system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return lossyPairing{accepts: true} }))
	caller := NewCaller(r.system, fixedRouter{lossy}, r.cfg)
	if o := r.probedCall(caller); o.Kind != protocol.Restarting {
		t.Fatalf("outcome %v; want restarting", o.Kind)
	}
}

// probedCall makes a call through caller, lets its first probe fall due
// once the pairing accepted the call, and returns how the call ended. Only the
// probe can end it: the call's own deadline is minutes of fake time away.
func (r *rig) probedCall(caller *Caller) protocol.Outcome {
	r.t.Helper()
	done := make(chan protocol.Outcome, 1)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	go func() { done <- caller.Call(ctx, protocol.CallRequest{Pairing: "p1", Tool: "whoami"}, nil) }()
	r.eventually(func() bool { _, accepted := caller.sb.waitingCalls(); return accepted == 1 }, "the call accepted, its probe armed")
	r.clock.Advance(r.cfg.ProbeEvery)
	select {
	case o := <-done:
		return o
	case <-ctx.Done():
		r.t.Fatal("the probe did not end the call")
		return protocol.Outcome{}
	}
}

// resultOf is the result message of call id that a tab sends with r.
func resultOf(t testing.TB, id string, r protocol.TabResult) protocol.Result {
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return protocol.Result{Envelope: protocol.Typed(protocol.TypeResult), ID: id, Result: b}
}

// bouncingPairing accepts a call and answers its probes as protoactor
// answers a request to an actor that is gone: with a dead letter.
type bouncingPairing struct{}

func (bouncingPairing) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *callRequest:
		ctx.Send(ctx.Sender(), &wire.CallAccepted{Id: m.id})
	case *wire.CallProbe:
		ctx.Respond(&actor.DeadLetterResponse{Target: ctx.Self()})
	}
}

// countingRouter counts lookups (each is an attempt of the call).
type countingRouter struct {
	pid     *actor.PID
	lookups atomic.Int32
}

func (c *countingRouter) Pairing(context.Context, string, *actor.PID) (*actor.PID, error) {
	c.lookups.Add(1)
	return c.pid, nil
}

// TestAnAcceptedCallIsNotSentAgainWhenItsProbeBounces: a probe that comes
// back as a dead letter says the pairing is gone; a call it had accepted
// ends with the restarting sentence and is not sent to a new activation
// (it may have run).
func TestAnAcceptedCallIsNotSentAgainWhenItsProbeBounces(t *testing.T) {
	r := newRig(t, nil)
	router := &countingRouter{pid: r.system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return bouncingPairing{} }))}
	caller := NewCaller(r.system, router, r.cfg)
	if o := r.probedCall(caller); o.Kind != protocol.Restarting {
		t.Fatalf("outcome %v; want restarting", o.Kind)
	}
	if n := router.lookups.Load(); n != 1 {
		t.Fatalf("the accepted call was sent %d times", n)
	}
}

// adopterOf is another node's activator as far as a move goes: it starts
// the pairing in acts with the state it is sent. With a gate, it holds
// the move under way until the test releases it.
func adopterOf(r *rig, acts *Activations, g *adoptGate) *actor.PID {
	return r.system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		m, ok := ctx.Message().(*wire.Adopt)
		if !ok {
			return
		}
		if g != nil && g.asked != nil {
			close(g.asked)
			<-g.release
		}
		pid, err := acts.Adopt(m.GetState())
		if err != nil {
			ctx.Respond(&wire.Activated{Error: err.Error()})
			return
		}
		ctx.Respond(&wire.Activated{Address: pid.Address, Id: pid.Id, Settles: g == nil || !g.oldBuild})
	}))
}

// handOff drains the rig's node ("node-a"): its pairings move to the
// first of adopters that takes them.
func (r *rig) handOff(adopters ...*actor.PID) {
	r.hub.router.(*LocalRouter).HandOff(func() []*actor.PID { return adopters }, "node-a")
}

// movesDone waits until n moves are counted: each old actor has handed
// over (its last step) and armed its linger.
func (r *rig) movesDone(n float64) {
	r.t.Helper()
	r.eventually(func() bool { return testutil.ToFloat64(r.cfg.Metrics.Moves.WithLabelValues("moved")) == n }, "%v moves done", n)
}

// activeIn waits until acts holds pairing id, and returns its actor.
func (r *rig) activeIn(acts *Activations, id string) *actor.PID {
	r.t.Helper()
	r.eventually(func() bool { _, ok := acts.Active(id); return ok }, "%s active", id)
	pid, _ := acts.Active(id)
	return pid
}

// snapshotOf asks the pairing actor pid for its state.
func (r *rig) snapshotOf(pid *actor.PID) *wire.Snapshot {
	r.t.Helper()
	res, err := r.system.Root.RequestFuture(pid, &wire.SnapshotRequest{}, patience).Result()
	s, ok := res.(*wire.Snapshot)
	if err != nil || !ok {
		r.t.Fatalf("snapshot of %s: %v %v", pid.Id, res, err)
	}
	return s
}

// adoptGate holds a move under way: asked is closed when the adopter is
// asked, and it answers once release is closed (when they are not nil).
// oldBuild: the adopter answers as a build that knows no MoveDone.
type adoptGate struct {
	asked, release chan struct{}
	oldBuild       bool
}

func newAdoptGate() *adoptGate {
	return &adoptGate{asked: make(chan struct{}), release: make(chan struct{})}
}

// TestAPairingWithACallMovesWithIt: a draining node's pairing that holds a
// call moves, state and all, to another node's activations; the tab's
// answer reaches the waiter there, the call runs once, and the old actor
// stops after forwarding for a while.
func TestAPairingWithACallMovesWithIt(t *testing.T) {
	r := newRig(t, nil)
	other := NewActivations(r.system, r.cfg, nil) // the other node's
	a := r.connect("p1", "tab-a", epoch)
	first := r.call("p1", "c1", "whoami")
	c := a.nextCall()
	old, _ := r.hub.router.(*LocalRouter).Active("p1")
	// A tool list's question to the tab, answered after the move.
	perms := make(chan bool, 1)
	go func() {
		got, ok := r.caller.permissions(context.Background(), "p1", protocol.Connection{ID: "c1"}, []string{"whoami"}, patience)
		perms <- ok && got["whoami"] == protocol.PermissionRuns
	}()
	query, ok := (<-a.in).(protocol.PermissionsQuery)
	if !ok {
		t.Fatal("the tab was not asked for permissions")
	}

	refuser := r.system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*wire.Adopt); ok {
			ctx.Respond(&wire.Activated{Error: "draining"}) // drains too: the next one is asked
		}
	}))
	r.handOff(refuser, adopterOf(r, other, nil))
	r.eventually(func() bool { _, ok := other.Active("p1"); return ok }, "the other node adopts p1")
	r.movesDone(1)
	moved, _ := other.Active("p1")
	if moved.Equal(old) {
		t.Fatal("adopted under the old actor's pid")
	}
	res, err := r.system.Root.RequestFuture(moved, &wire.SnapshotRequest{}, patience).Result()
	if got, ok := res.(*wire.Snapshot); err != nil || !ok || got.GetCalls() != 1 || len(got.GetTabs()) != 1 || got.GetTabs()[0] != "tab-a" {
		t.Fatalf("adopted state %v, %v; want the call and tab-a", res, err)
	}
	// The tab answers after the move: the answers go to the new actor.
	a.tab.Forward(protocol.Permissions{Envelope: protocol.Typed(protocol.TypePermissions), ID: query.ID, Tools: map[string]string{"whoami": protocol.PermissionRuns}})
	if !<-perms {
		t.Fatal("the permissions answer sent after the move did not reach the asker")
	}
	a.answer(c.ID, "from a")
	if text := answerText(t, first.outcome(t)); text != "from a" {
		t.Fatalf("answered %q", text)
	}
	a.nothingQueued("the tab got %+v after the move; the call must not be sent again")
	// A call sent to the old actor while it forwards reaches the tab too.
	r.callVia(old, "late-1", a)
	// One answered only after the old actor stopped still gets its
	// answer: its waiter heard where the pairing is now.
	late := make(chan protocol.Outcome, 1)
	go func() {
		o, _ := r.caller.await(context.Background(), old, "late-2", protocol.CallRequest{Pairing: "p1", Tool: "whoami", Arguments: json.RawMessage(`{}`)}, nil)
		late <- o
	}()
	c3 := a.nextCall()
	// A tab that registers with the old actor meanwhile ends up with the
	// new one, and stays with it once the old actor stops.
	b := r.connect("p1", "tab-b", epoch.Add(time.Second))
	r.clock.Advance(moveLinger)
	r.eventually(func() bool { _, ok := r.hub.router.(*LocalRouter).Active("p1"); return !ok }, "the old actor stops")
	a.answer(c3.ID, "late-2")
	if o := <-late; o.Kind != protocol.Answered {
		t.Fatalf("a call forwarded by the old actor ended %v once it stopped", o.Kind)
	}
	if _, ok := other.Active("p1"); !ok {
		t.Fatal("the new actor stopped too")
	}
	r.callVia(moved, "last-1", b)
}

// callVia sends call id to the pairing actor pid, and checks that tab gets
// it and that its answer reaches the caller.
func (r *rig) callVia(pid *actor.PID, id string, tab *testTab) {
	r.t.Helper()
	ended := make(chan protocol.Outcome, 1)
	go func() {
		o, _ := r.caller.await(context.Background(), pid, id, protocol.CallRequest{Pairing: "p1", Tool: "whoami", Arguments: json.RawMessage(`{}`)}, nil)
		ended <- o
	}()
	c := tab.nextCall()
	tab.answer(c.ID, id)
	select {
	case o := <-ended:
		if o.Kind != protocol.Answered || !strings.Contains(string(o.Result.Data), id) {
			r.t.Fatalf("call %s ended %v %+v", id, o.Kind, o.Result)
		}
	case <-time.After(patience):
		r.t.Fatalf("call %s did not end", id)
	}
}

// TestAPairingThatCannotMoveFinishesItsCalls: the other node refuses the
// move (it drains too): the pairing stays, its call is answered here, and
// it stops once it holds no call.
func TestAPairingThatCannotMoveFinishesItsCalls(t *testing.T) {
	r := newRig(t, nil)
	refuser := r.system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*wire.Adopt); ok {
			ctx.Respond(&wire.Activated{Error: "draining"})
		}
	}))
	a := r.connect("p1", "tab-a", epoch)
	first := r.call("p1", "c1", "whoami")
	c := a.nextCall()
	router := r.hub.router.(*LocalRouter)
	r.handOff(refuser)
	second := r.call("p1", "c1", "whoami") // during the move or after it failed: taken here
	c2 := a.nextCall()
	a.answer(c.ID, "one")
	a.answer(c2.ID, "two")
	if text := answerText(t, first.outcome(t)); text != "one" {
		t.Fatalf("first answered %q", text)
	}
	if text := answerText(t, second.outcome(t)); text != "two" {
		t.Fatalf("second answered %q", text)
	}
	r.eventually(func() bool { _, ok := router.Active("p1"); return !ok }, "the pairing stops once its calls are done")
	if got := testutil.ToFloat64(r.cfg.Metrics.Moves.WithLabelValues("stayed")); got != 1 {
		t.Fatalf("stayed counted %v, want 1", got)
	}
	if pid, err := router.Pairing(context.Background(), "p1", nil); err == nil {
		t.Fatalf("a handed-off node activated %v", pid)
	}
}

// TestATabThatLooksItsPairingUpAgainGetsItsCallsAgain: a tab that found
// its pairing actor gone registers with the actor that holds the pairing
// now; if that one held the tab already (it moved there), the tab's calls
// go to it again, since its answers may have gone to the gone actor. A
// confirmation sends nothing.
func TestATabThatLooksItsPairingUpAgainGetsItsCallsAgain(t *testing.T) {
	r := newRig(t, nil)
	a := r.connect("p1", "tab-a", epoch)
	r.call("p1", "c1", "whoami")
	c := a.nextCall()
	pid, _ := r.hub.router.(*LocalRouter).Active("p1")
	register := func(lookedUp bool) {
		t.Helper()
		res, err := r.system.Root.RequestFuture(pid, &wire.TabRegister{TabId: "tab-a", TabAddress: a.tab.pid.Address,
			TabActor: a.tab.pid.Id, LookedUp: lookedUp}, patience).Result()
		if ok, _ := res.(*wire.TabRegistered); err != nil || ok == nil || !ok.GetAccepted() {
			t.Fatalf("registration answered %v, %v", res, err)
		}
	}
	a.tab.Forward(protocol.Asking{Envelope: protocol.Typed(protocol.TypeAsking), ID: c.ID})
	r.eventually(func() bool { return r.inspect("p1").Asking == 1 }, "the tab asks the person")
	register(false)
	register(true)
	again := a.nextCall()
	if again.ID != c.ID || again.Redelivery != 1 {
		t.Fatalf("got %s (redelivery %d), want %s again once", again.ID, again.Redelivery, c.ID)
	}
	a.nothingQueued("the tab got %+v; a confirmation sends nothing")
	if got := r.inspect("p1").Asking; got != 1 {
		t.Fatalf("asking %d after the call went to the same tab again, want 1: the person's question is still open", got)
	}
}

// TestASupersededNoticeDuringAMoveStaysWithTheOldActor: a Superseded that
// reaches the moving actor names that actor, not the one that adopts it:
// it is held, and never passed on to the new actor.
func TestASupersededNoticeDuringAMoveStaysWithTheOldActor(t *testing.T) {
	r := newRig(t, nil)
	other := NewActivations(r.system, r.cfg, nil)
	gate := newAdoptGate()
	slow := adopterOf(r, other, gate)
	a := r.connect("p1", "tab-a", epoch)
	first := r.call("p1", "c1", "whoami")
	c := a.nextCall()
	router := r.hub.router.(*LocalRouter)
	old, _ := router.Active("p1")
	r.handOff(slow)
	r.system.Root.Send(old, &wire.Superseded{})
	close(gate.release)
	r.eventually(func() bool { _, ok := other.Active("p1"); return ok }, "the other node adopts p1")
	a.answer(c.ID, "after")
	if text := answerText(t, first.outcome(t)); text != "after" {
		t.Fatalf("answered %q", text)
	}
	if _, ok := other.Active("p1"); !ok {
		t.Fatal("the held Superseded stopped the new actor")
	}
}

// TestAnAnswerHeldDuringAMoveIsNotRunAgain: a tab answers and closes while
// its pairing moves; the browser has another tab. The new actor reads the
// held answer before it acts on the tab's close, so the call is not sent
// to the other tab.
func TestAnAnswerHeldDuringAMoveIsNotRunAgain(t *testing.T) {
	r := newRig(t, nil)
	other := NewActivations(r.system, r.cfg, nil)
	b := r.connect("p1", "tab-b", epoch)
	a := r.connect("p1", "tab-a", epoch.Add(time.Second)) // focused last
	first := r.call("p1", "c1", "whoami")
	c := a.nextCall()
	gate := newAdoptGate()
	r.handOff(adopterOf(r, other, gate))
	<-gate.asked
	a.answer(c.ID, "from a")
	if err := r.system.Root.PoisonFuture(a.tab.pid).Wait(); err != nil { // as Close, and the tab has stopped
		t.Fatal(err)
	}
	close(gate.release)
	if text := answerText(t, first.outcome(t)); text != "from a" {
		t.Fatalf("answered %q", text)
	}
	moved := r.activeIn(other, "p1")
	r.eventually(func() bool { return len(r.snapshotOf(moved).GetTabs()) == 1 }, "the new actor dropped tab-a")
	if n := testutil.ToFloat64(r.cfg.Metrics.Redeliveries); n != 0 {
		t.Fatalf("%v redeliveries: the call tab-a answered was sent again", n)
	}
	b.nothingQueued("tab-b got %+v: the call tab-a answered was run again")
}

// TestACallWaitingForItsTabStillWaitsAfterAMove: the call's tab went away
// after it took the call, so the call waits for a tab until its deadline;
// it does so on the actor that adopted the pairing too. (It was taken in a
// grace for an earlier tab, which ran out meanwhile: that is over.)
// TestACallWaitingForItsTabStillWaitsAfterAMove: a call whose tab closed
// mid-call waits the tab grace for a tab on the node it moved to, and then
// is answered that its tab closed (the move keeps that a tab had it).
func TestACallWaitingForItsTabStillWaitsAfterAMove(t *testing.T) {
	r := newRig(t, nil)
	other := NewActivations(r.system, r.cfg, nil)
	gone := r.connect("p1", "tab-gone", epoch)
	gone.tab.Close()
	r.eventually(func() bool { return len(r.inspect("p1").Tabs) == 0 }, "tab-gone gone")
	first := r.call("p1", "c1", "whoami") // in the grace for tab-gone
	r.eventually(func() bool { return r.inspect("p1").Calls == 1 }, "the call taken")
	a := r.connect("p1", "tab-a", epoch)
	a.nextCall()
	r.clock.Advance(r.cfg.TabGrace + time.Second) // tab-gone's grace is over: tab-a has the call
	a.tab.Close()
	r.eventually(func() bool { return len(r.inspect("p1").Tabs) == 0 }, "tab-a gone")
	r.clock.Advance(time.Second) // in the grace for tab-a
	router := r.hub.router.(*LocalRouter)
	old, _ := router.Active("p1")
	r.handOff(adopterOf(r, other, nil))
	moved := r.activeIn(other, "p1")
	if n := r.snapshotOf(moved).GetCalls(); n != 1 {
		t.Fatalf("%d calls adopted, want 1", n)
	}
	r.movesDone(1)
	r.snapshotOf(old)           // read after the move's end: its linger is armed (the new actor answers)
	r.clock.Advance(moveLinger) // the old actor has forwarded all and stops
	r.eventually(func() bool { _, ok := router.Active("p1"); return !ok }, "the old actor stops")
	r.snapshotOf(moved) // the new one has read the old one's MoveDone
	r.clock.Advance(r.cfg.TabGrace)
	if o := first.outcome(t); o.Kind != protocol.TabClosed {
		t.Fatalf("the call ended %v after the move; its tab closed mid-call, so it ends tab_closed at the grace", o.Kind)
	}
}

// TestAPairingThatDrainsBeforeItSettledMovesOnWithItsGraces: a pairing
// moves to B, whose node drains before B settled (its adopter was of an
// older build: no MoveDone comes). B moves on only once settled, and its
// call's wait for a tab that went away lately moves with it.
func TestAPairingThatDrainsBeforeItSettledMovesOnWithItsGraces(t *testing.T) {
	r := newRig(t, nil)
	b, c := NewActivations(r.system, r.cfg, nil), NewActivations(r.system, r.cfg, nil)
	a := r.connect("p1", "tab-a", epoch)
	a.tab.Close()
	r.eventually(func() bool { return len(r.inspect("p1").Tabs) == 0 }, "tab-a gone")
	first := r.call("p1", "c1", "whoami") // waits TabGrace for a tab
	r.eventually(func() bool { return r.inspect("p1").Calls == 1 }, "the call taken")
	r.handOff(adopterOf(r, b, &adoptGate{oldBuild: true}))
	onB := r.activeIn(b, "p1")
	// C adopts only once the clock stands still: its wait for a tab ran
	// out already, so once settled C arms it for now, which an Advance
	// still running would fire before C is looked at.
	toC := newAdoptGate()
	b.HandOff(func() []*actor.PID { return []*actor.PID{adopterOf(r, c, toC)} }, "node-b")
	r.snapshotOf(onB) // B has read the hand-off
	if _, ok := c.Active("p1"); ok {
		t.Fatal("moved on before it settled")
	}
	r.clock.Advance(settleWait) // B settles without MoveDone, then moves on
	<-toC.asked
	close(toC.release)
	onC := r.activeIn(c, "p1")
	r.movesDone(2)
	r.snapshotOf(onB) // read after the move's end: C has B's MoveDone before this
	if n := r.snapshotOf(onC).GetCalls(); n != 1 {
		t.Fatalf("C holds %d calls, want 1", n)
	}
	r.clock.Advance(time.Millisecond)
	if o := first.outcome(t); o.Kind != protocol.NoTab {
		t.Fatalf("the call ended %v; its wait for a tab had run out", o.Kind)
	}
}

// TestACallNotAcceptedYetIsProbedOnceMore: a probe that finds a call not
// yet accepted missing may have overtaken the call on its way; the waiter
// gives up at the second such probe.
func TestACallNotAcceptedYetIsProbedOnceMore(t *testing.T) {
	r := newRig(t, nil)
	late := r.system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return lossyPairing{} }))
	type ended struct {
		o     protocol.Outcome
		retry bool
	}
	done := make(chan ended, 1)
	go func() {
		o, retry := NewCaller(r.system, fixedRouter{late}, r.cfg).await(context.Background(), late, "c1", protocol.CallRequest{Pairing: "p1", Tool: "whoami"}, nil)
		done <- ended{o, retry}
	}()
	r.eventually(func() bool { n, _ := r.caller.sb.waitingCalls(); return n == 1 }, "the call waiting, its probe armed")
	r.clock.Advance(r.cfg.ProbeEvery)
	select {
	case e := <-done:
		t.Fatalf("the first probe ended the call: %v", e.o.Kind)
	case <-time.After(200 * time.Millisecond):
	}
	r.eventually(func() bool { return r.clock.Pending() >= 1 }, "the next probe armed")
	r.clock.Advance(r.cfg.ProbeEvery)
	select {
	case e := <-done:
		if e.o.Kind != protocol.Restarting || !e.retry {
			t.Fatalf("ended %v (retry %v), want restarting with a retry", e.o.Kind, e.retry)
		}
	case <-time.After(patience):
		t.Fatal("the second probe did not end the call")
	}
}

// TestATabThatTakesAnAdoptedCallEndsItsGrace: an adopted call waiting in
// its grace is taken by a tab before the new actor settled; once that tab
// is gone too, the call waits a grace from then, not until the old grace.
func TestATabThatTakesAnAdoptedCallEndsItsGrace(t *testing.T) {
	r := newRig(t, func(c *Config) { c.TabGrace = 30 * time.Second })
	other := NewActivations(r.system, r.cfg, nil)
	gone := r.connect("p1", "tab-gone", epoch)
	gone.tab.Close()
	r.eventually(func() bool { return len(r.inspect("p1").Tabs) == 0 }, "tab-gone gone")
	first := r.call("p1", "c1", "whoami") // waits in the grace, 30 s
	r.eventually(func() bool { return r.inspect("p1").Calls == 1 }, "the call taken")
	r.handOff(adopterOf(r, other, &adoptGate{oldBuild: true}))
	moved := r.activeIn(other, "p1")
	r.movesDone(1)
	b := r.connect("p1", "tab-b", epoch) // through the old actor, to the new one: not settled
	b.nextCall()
	r.clock.Advance(settleWait)
	b.tab.Close()
	r.eventually(func() bool { return len(r.snapshotOf(moved).GetTabs()) == 0 }, "tab-b gone")
	r.clock.Advance(r.cfg.TabGrace - time.Millisecond) // past the old grace
	select {
	case o := <-first.done:
		t.Fatalf("the call ended %v at the grace it had before a tab took it", o.Kind)
	case <-time.After(200 * time.Millisecond):
	}
	r.clock.Advance(time.Millisecond) // the grace since tab-b closed
	if o := first.outcome(t); o.Kind != protocol.TabClosed {
		t.Fatalf("the call ended %v, want tab_closed", o.Kind)
	}
}

// TestCallEventsCrossTheWire: every kind of call event reaches the waiter
// as it left the tab's node, through the wire's encoding (one asking kind
// with a flag for the person still being asked, or having answered).
func TestCallEventsCrossTheWire(t *testing.T) {
	for _, e := range []protocol.CallEvent{
		{CallID: "c1", Kind: protocol.CallAsking},
		{CallID: "c1", Kind: protocol.CallAnswered},
		{CallID: "c1", Kind: protocol.CallProgress, Progress: 2, Total: 5, Message: "two of five"},
		{CallID: "c1", Kind: protocol.CallLog, Level: "warning", Data: json.RawMessage(`{"note":"x"}`)},
	} {
		raw, err := proto.Marshal(toWireEvent(e))
		if err != nil {
			t.Fatal(err)
		}
		var w wire.Event
		if err := proto.Unmarshal(raw, &w); err != nil {
			t.Fatal(err)
		}
		if got := fromWireEvent(&w); !reflect.DeepEqual(got, e) {
			t.Errorf("event %+v came back as %+v", e, got)
		}
	}
}
