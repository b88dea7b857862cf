package headless

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/protocol"
)

func TestHelloProvesTheTab(t *testing.T) {
	relay := newFakeRelay(t)
	opts := testOptions(t, relay)
	opts.Focus = true
	tab := start(t, opts)
	s := relay.accept(t)
	h := s.hello
	if h.Type != protocol.TypeHello || h.Protocol != protocol.Version || h.Bundle != "probe-1" {
		t.Errorf("hello %+v, want type hello, protocol %d, bundle probe-1", h, protocol.Version)
	}
	if len(h.Secret) != 43 || h.TabID != tab.TabID() || h.Reconnects != 0 || h.FocusedAt == 0 {
		t.Errorf("hello secret of %d chars, tab %q, reconnects %d, focusedAt %d; want 43, %q, 0, set",
			len(h.Secret), h.TabID, h.Reconnects, h.FocusedAt, tab.TabID())
	}
	if s.origin != testOrigin {
		t.Errorf("origin %q, want %q", s.origin, testOrigin)
	}
	if m, _ := s.nextWithin(waitLong); m.Type != protocol.TypeFocus || m.At == 0 {
		t.Errorf("after the welcome %+v, want a focus", m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if err := tab.WaitConnected(ctx); err != nil || !tab.Connected() || tab.Pairing() != "ptest" {
		t.Errorf("connected %v, pairing %q (%v); want true, ptest", tab.Connected(), tab.Pairing(), err)
	}
	s.send(protocol.Ping{Envelope: protocol.Typed(protocol.TypePing), At: 1})
	if m, _ := s.nextWithin(waitLong); m.Type != protocol.TypePong {
		t.Errorf("answer to a ping %+v, want a pong", m)
	}
	secret, err := os.ReadFile(opts.SecretFile)
	if err != nil || strings.TrimSpace(string(secret)) != h.Secret {
		t.Errorf("secret file holds %q (%v), want the hello's secret", secret, err)
	}
}

func TestProbeTools(t *testing.T) {
	relay := newFakeRelay(t)
	opts := testOptions(t, relay)
	opts.Name = "alpha"
	start(t, opts)
	s := relay.accept(t)
	tests := []struct {
		name, tool, args string
		want             string // the result's data, as JSON
		wantErr          string // part of the result's error
		step             bool   // a step of conn-1 comes before the result
	}{
		{name: "whoami", tool: "whoami", want: `{"tab":"alpha","focusedAt":0}`},
		{name: "counter increment", tool: "counter", args: `{"action":"increment","by":2}`, want: `{"counter":2}`, step: true},
		{name: "counter increment by one", tool: "counter", args: `{"action":"increment"}`, want: `{"counter":3}`, step: true},
		{name: "counter get", tool: "counter", args: `{"action":"get"}`, want: `{"counter":3}`},
		{name: "counter reset", tool: "counter", args: `{"action":"reset"}`, want: `{"counter":0}`, step: true},
		{name: "counter bad action", tool: "counter", args: `{"action":"double"}`, wantErr: "get, increment or reset"},
		{name: "counter bad by", tool: "counter", args: `{"action":"increment","by":"two"}`, wantErr: "by must be an integer"},
		{name: "notes add", tool: "notes", args: `{"action":"add","text":"milk"}`, want: `{"notes":["milk"]}`, step: true},
		{name: "notes add again", tool: "notes", args: `{"action":"add","text":"<b>eggs</b>"}`, want: `{"notes":["milk","<b>eggs</b>"]}`, step: true},
		{name: "notes list", tool: "notes", args: `{"action":"list"}`, want: `{"notes":["milk","<b>eggs</b>"]}`},
		{name: "notes add without text", tool: "notes", args: `{"action":"add"}`, wantErr: "needs a text"},
		{name: "notes clear", tool: "notes", args: `{"action":"clear"}`, want: `{"notes":[]}`, step: true},
		{name: "echo", tool: "echo", args: `{"value":{"a":[1,"x<y"],"b":null}}`, want: `{"value":{"a":[1,"x<y"],"b":null}}`},
		{name: "echo without value", tool: "echo", want: `{"value":null}`},
		{name: "wait", tool: "wait", args: `{"ms":1}`, want: `{"waited":1}`},
		{name: "wait too long", tool: "wait", args: `{"ms":600001}`, wantErr: "ms must be"},
		{name: "fail", tool: "fail", args: `{"message":"the sheet is locked"}`, wantErr: "the sheet is locked"},
		{name: "fail by default", tool: "fail", wantErr: "it failed"},
		{name: "unknown tool", tool: "format_disk", wantErr: `no tool "format_disk"`},
		{name: "arguments not an object", tool: "echo", args: `[1]`, wantErr: "not a JSON object"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s.t = t
			id := "call-" + string(rune('a'+i))
			s.call(id, tc.tool, tc.args)
			res := s.result(id)
			if tc.wantErr != "" {
				if !strings.Contains(res.Error, tc.wantErr) || res.Data != nil {
					t.Fatalf("result %+v, want an error with %q", res, tc.wantErr)
				}
				return
			}
			if res.Error != "" || !sameJSON(res.Data, tc.want) {
				t.Fatalf("result %s (error %q), want %s", res.Data, res.Error, tc.want)
			}
			stepped := len(s.skipped) == 1 && s.skipped[0] == protocol.Envelope{Type: protocol.TypeStep, Ref: "conn-1"}
			if stepped != tc.step || (!tc.step && len(s.skipped) > 0) {
				t.Fatalf("before the result %v, want a step of conn-1: %v", s.skipped, tc.step)
			}
		})
	}
}

func sameJSON(got json.RawMessage, want string) bool {
	var a, b any
	return json.Unmarshal(got, &a) == nil && json.Unmarshal([]byte(want), &b) == nil && reflect.DeepEqual(a, b)
}

func TestViewPictureIsAPNG(t *testing.T) {
	relay := newFakeRelay(t)
	start(t, testOptions(t, relay))
	s := relay.accept(t)
	s.call("inc", "counter", `{"action":"increment","by":5}`)
	s.result("inc")
	for _, width := range []int{1, 100, 1024} {
		id := "pic-" + string(rune('a'+width%26))
		s.call(id, "view_picture", `{"width":`+jsonInt(width)+`}`)
		res := s.result(id)
		if len(res.Images) != 1 || res.Images[0].MimeType != "image/png" {
			t.Fatalf("width %d: images %+v, want one PNG", width, res.Images)
		}
		raw, err := base64.StdEncoding.DecodeString(res.Images[0].Data)
		if err != nil {
			t.Fatalf("width %d: picture not in standard base64: %v", width, err)
		}
		img, err := png.Decode(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("width %d: not a PNG: %v", width, err)
		}
		if b := img.Bounds(); b.Dx() != width || b.Dy() != 32 {
			t.Fatalf("picture %v, want %d×32", b, width)
		}
		if !sameJSON(res.Data, `{"width":`+jsonInt(width)+`,"height":32}`) {
			t.Fatalf("data %s, want the width and height", res.Data)
		}
	}
	s.call("default", "view_picture", "")
	if res := s.result("default"); !sameJSON(res.Data, `{"width":64,"height":32}`) {
		t.Fatalf("default picture %s, want 64×32", res.Data)
	}
	s.call("wide", "view_picture", `{"width":1025}`)
	if res := s.result("wide"); !strings.Contains(res.Error, "from 1 to 1024") || len(res.Images) > 0 {
		t.Fatalf("width 1025: %+v, want an error", res)
	}
}

func jsonInt(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestRedeliveredCallIsAnsweredFromMemory(t *testing.T) {
	relay := newFakeRelay(t)
	opts := testOptions(t, relay)
	opts.ExecLog = filepath.Join(t.TempDir(), "exec.log")
	tab := start(t, opts)
	s := relay.accept(t)
	s.call("c1", "counter", `{"action":"increment"}`)
	first := s.result("c1")
	s.call("c1", "counter", `{"action":"increment"}`)
	if again := s.result("c1"); !reflect.DeepEqual(again, first) || !sameJSON(first.Data, `{"counter":1}`) {
		t.Fatalf("redelivered result %s, first %s; want both {\"counter\":1}", again.Data, first.Data)
	}
	if n := tab.Executions()["c1"]; n != 1 {
		t.Fatalf("c1 ran %d times, want 1", n)
	}
	s.call("get", "counter", `{"action":"get"}`)
	if res := s.result("get"); !sameJSON(res.Data, `{"counter":1}`) {
		t.Fatalf("counter %s after a redelivery, want 1", res.Data)
	}
	if lines := execLines(t, opts.ExecLog); !reflect.DeepEqual(lines, []string{"c1 counter", "get counter"}) {
		t.Fatalf("exec log %q, want c1 and get once each", lines)
	}
}

func execLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

func TestReconnectCodeReconnectsAndResultFollows(t *testing.T) {
	relay := newFakeRelay(t)
	tab := start(t, testOptions(t, relay))
	first := relay.accept(t)
	first.call("w1", "wait", `{"ms":1000}`) // still running when the close arrives
	first.close(protocol.CloseShutdown)     // 4000: reconnect
	second := relay.accept(t)
	if h := second.hello; h.Reconnects != 1 || h.TabID != first.hello.TabID || h.Secret != first.hello.Secret {
		t.Fatalf("hello after a reconnect: reconnects %d, same tab %v, same secret %v",
			h.Reconnects, h.TabID == first.hello.TabID, h.Secret == first.hello.Secret)
	}
	// The call finished while (or after) the socket was away: its result
	// comes on the new socket, and so does the answer to its redelivery.
	if res := second.result("w1"); !sameJSON(res.Data, `{"waited":1000}`) {
		t.Fatalf("result on the new socket %+v, want waited 1000", res)
	}
	second.call("w1", "wait", `{"ms":1000}`)
	if res := second.result("w1"); !sameJSON(res.Data, `{"waited":1000}`) {
		t.Fatalf("redelivered result %+v, want waited 1000", res)
	}
	if n := tab.Executions()["w1"]; n != 1 {
		t.Fatalf("w1 ran %d times, want 1", n)
	}
}

func TestRedeliveryWhileRunningAnswersOnce(t *testing.T) {
	relay := newFakeRelay(t)
	tab := start(t, testOptions(t, relay))
	s := relay.accept(t)
	s.call("w", "wait", `{"ms":1000}`)
	s.call("w", "wait", `{"ms":1000}`) // arrives while the first runs
	s.result("w")
	s.quiet() // the redelivery while it ran brought no second result
	if n := tab.Executions()["w"]; n != 1 {
		t.Fatalf("w ran %d times, want 1", n)
	}
}

func TestTabsOfOneBrowserRunACallOnce(t *testing.T) {
	relay := newFakeRelay(t)
	optsA := testOptions(t, relay)
	optsA.Name, optsA.ExecLog = "a", filepath.Join(t.TempDir(), "exec.log")
	optsB := optsA
	// b waits 1 s for a's answers: a's 50 ms call comes well within it,
	// and its 3 s call well after.
	optsB.Name, optsB.ClaimWait = "b", time.Second
	a, b := start(t, optsA), start(t, optsB)
	sa, sb := relay.accept(t), relay.accept(t)
	if sa.hello.TabID != a.TabID() {
		sa, sb = sb, sa
	}
	if sa.hello.Secret != sb.hello.Secret || sa.hello.TabID == sb.hello.TabID || sb.hello.TabID != b.TabID() {
		t.Fatal("two tabs of one secret file: want one secret, two tab ids")
	}
	t.Run("finished in the other tab", func(t *testing.T) {
		sa.t, sb.t = t, t
		sa.call("x1", "whoami", "")
		first := sa.result("x1")
		sb.call("x1", "whoami", "")
		if got := sb.result("x1"); !reflect.DeepEqual(got, first) || !sameJSON(first.Data, `{"tab":"a","focusedAt":0}`) {
			t.Fatalf("b answered %s, want a's %s", got.Data, first.Data)
		}
	})
	t.Run("running in the other tab", func(t *testing.T) {
		sa.t, sb.t = t, t
		sa.call("x2", "wait", `{"ms":50}`)
		waitForFile(t, optsA.SecretFile+".calls/x2")
		sb.call("x2", "wait", `{"ms":50}`)
		if got := sb.result("x2"); !sameJSON(got.Data, `{"waited":50}`) {
			t.Fatalf("b answered %+v, want a's waited 50", got)
		}
		sa.result("x2")
	})
	t.Run("the other tab does not answer in time", func(t *testing.T) {
		sa.t, sb.t = t, t
		sa.call("x3", "wait", `{"ms":3000}`)
		waitForFile(t, optsA.SecretFile+".calls/x3")
		sb.call("x3", "wait", `{"ms":3000}`)
		if got := sb.result("x3"); got.Error != sentenceOtherTab {
			t.Fatalf("b answered %+v, want the other-tab sentence", got)
		}
		sa.result("x3")
		sb.call("x3", "wait", `{"ms":3000}`) // once a has answered, b has its result
		if got := sb.result("x3"); !sameJSON(got.Data, `{"waited":3000}`) {
			t.Fatalf("b answered %+v after a finished, want waited 3000", got)
		}
	})
	if n := len(b.Executions()); n != 0 {
		t.Fatalf("b ran %d calls, want none", n)
	}
	want := []string{"x1 whoami", "x2 wait", "x3 wait"}
	if lines := execLines(t, optsA.ExecLog); !reflect.DeepEqual(lines, want) {
		t.Fatalf("exec log %q, want %q", lines, want)
	}
}

func waitForFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(waitLong); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s never appeared", path)
}

func TestDrainReconnectsAfterItsDelay(t *testing.T) {
	relay := newFakeRelay(t)
	opts := testOptions(t, relay)
	opts.MinBackoff, opts.MaxBackoff = time.Hour, time.Hour // a backoff would outlast the test
	start(t, opts, func(tab *Tab) { tab.jitter = func(d time.Duration) time.Duration { return d } })
	first := relay.accept(t)
	began := time.Now()
	first.send(protocol.Drain{Envelope: protocol.Typed(protocol.TypeDrain), ReconnectAfterMs: 50})
	second := relay.accept(t)
	if waited := time.Since(began); waited < 50*time.Millisecond {
		t.Fatalf("reconnected after %v, want at least the drain's 50ms", waited)
	}
	if second.hello.Reconnects != 1 {
		t.Fatalf("reconnects %d, want 1", second.hello.Reconnects)
	}
}

func TestStopCodeEndsRun(t *testing.T) {
	relay := newFakeRelay(t)
	tab := start(t, testOptions(t, relay))
	relay.accept(t).close(protocol.CloseBadSecret)
	err := tab.wait(t)
	var stop *StopError
	if !errors.As(err, &stop) || stop.Code != protocol.CloseBadSecret || !strings.Contains(err.Error(), "bad tab secret") {
		t.Fatalf("Run returned %v, want a StopError for 4100 naming its reason", err)
	}
	relay.noSocket(t, 50*time.Millisecond)
	if tab.Connected() {
		t.Fatal("still connected after a stop")
	}
}

func TestClearAllAsksThenAnswers(t *testing.T) {
	relay := newFakeRelay(t)
	opts := testOptions(t, relay)
	opts.AnswerAfter = 10 * time.Millisecond
	start(t, opts)
	s := relay.accept(t)
	s.call("inc", "counter", `{"action":"increment","by":4}`)
	s.result("inc")
	s.call("clr", "clear_all", "")
	for _, want := range []message{{Type: "asking", ID: "clr"}, {Type: "answered", ID: "clr"}, {Type: "step", By: "conn-1"}} {
		if got := s.next(); got.Type != want.Type || got.ID != want.ID || got.By != want.By {
			t.Fatalf("got %+v, want %+v", got, want)
		}
	}
	if res := s.result("clr"); !sameJSON(res.Data, `{"cleared":true}`) {
		t.Fatalf("clear_all answered %+v", res)
	}
	s.call("get", "counter", `{"action":"get"}`)
	if res := s.result("get"); !sameJSON(res.Data, `{"counter":0}`) {
		t.Fatalf("counter %s after clear_all, want 0", res.Data)
	}
}

func TestCancelStopsACall(t *testing.T) {
	relay := newFakeRelay(t)
	opts := testOptions(t, relay)
	opts.AnswerAfter = -1 // the person never answers
	tab := start(t, opts)
	s := relay.accept(t)
	s.call("inc", "counter", `{"action":"increment"}`)
	s.result("inc")
	s.call("long", "wait", `{"ms":600000}`)
	s.call("ask", "clear_all", "")
	if m := s.next(); m.Type != protocol.TypeAsking || m.ID != "ask" {
		t.Fatalf("got %+v, want asking", m)
	}
	// Each call runs in its own goroutine: cancel "long" once it runs.
	for deadline := time.Now().Add(waitLong); tab.Executions()["long"] == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the long call never started")
		}
	}
	s.cancel("long")
	s.cancel("ask")
	s.call("get", "counter", `{"action":"get"}`)
	if res := s.result("get"); !sameJSON(res.Data, `{"counter":1}`) || len(s.skipped) > 0 {
		t.Fatalf("counter %s with %v before it; want 1, nothing of the cancelled calls", res.Data, s.skipped)
	}
	s.quiet() // the cancelled calls answer nothing
	if e := tab.Executions(); e["long"] != 1 || e["ask"] != 1 {
		t.Fatalf("executions %v, want long and ask once", e)
	}
}

func TestBadCallIDTouchesNoFile(t *testing.T) {
	relay := newFakeRelay(t)
	opts := testOptions(t, relay)
	tab := start(t, opts)
	s := relay.accept(t)
	for _, id := range []string{"../escape", `a\b`, "..", ".hidden", strings.Repeat("x", 101)} {
		s.call(id, "counter", `{"action":"increment"}`)
		if res := s.result(id); res.Error != sentenceBadID {
			t.Fatalf("id %q: %+v, want the bad-id sentence", id, res)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(opts.SecretFile), "escape")); !os.IsNotExist(err) {
		t.Fatalf("a file outside the calls directory: %v", err)
	}
	if entries, _ := os.ReadDir(opts.SecretFile + ".calls"); len(entries) != 0 || len(tab.Executions()) != 0 {
		t.Fatalf("%d claims, %d executions; want none", len(entries), len(tab.Executions()))
	}
}

func TestSecretFileIsMadeOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "browser", "secret")
	secrets := make([]string, 8)
	var wg sync.WaitGroup
	for i := range secrets {
		wg.Go(func() {
			s, err := loadOrCreateSecret(path)
			if err != nil {
				t.Error(err)
			}
			secrets[i] = s
		})
	}
	wg.Wait()
	for _, s := range secrets {
		if s != secrets[0] || len(s) != 43 {
			t.Fatalf("secrets %q, want one of 43 characters", secrets)
		}
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("secret file %v (%v), want mode 0600", info.Mode(), err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Fatalf("%d files beside the secret, want none", len(entries)-1)
	}
	if err := os.WriteFile(path, []byte("not a secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{Relay: "http://x", Origin: testOrigin, SecretFile: path}); err == nil {
		t.Fatal("New accepted a secret file that holds no secret")
	}
}

func TestBackoffIsFullJitterWithinBounds(t *testing.T) {
	tab, err := New(Options{Relay: "http://relay", Origin: testOrigin})
	if err != nil {
		t.Fatal(err)
	}
	for attempt := range 100 {
		if d := tab.backoff(attempt); d < 0 || d >= DefaultMaxBackoff {
			t.Fatalf("attempt %d waits %v, want [0, 20s)", attempt, d)
		}
	}
	tab.jitter = func(d time.Duration) time.Duration { return d }
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second,
		8 * time.Second, 16 * time.Second, 20 * time.Second, 20 * time.Second}
	for attempt, w := range want {
		if got := tab.backoff(attempt); got != w {
			t.Errorf("ceiling of attempt %d is %v, want %v", attempt, got, w)
		}
	}
	if got := tab.backoff(1000); got != DefaultMaxBackoff {
		t.Errorf("ceiling of attempt 1000 is %v, want 20s", got)
	}
}

func TestSocketURL(t *testing.T) {
	tests := []struct{ relay, want string }{
		{"http://127.0.0.1:8080", "ws://127.0.0.1:8080/tab"},
		{"https://relay.example.com/", "wss://relay.example.com/tab"},
		{"https://example.com/relay", "wss://example.com/relay/tab"},
		{"wss://relay.example.com/custom", "wss://relay.example.com/custom"},
		{"ftp://relay.example.com", ""},
		{"relay.example.com", ""},
	}
	for _, tc := range tests {
		got, err := socketURL(tc.relay)
		if got != tc.want || (err != nil) != (tc.want == "") {
			t.Errorf("socketURL(%q) = %q, %v; want %q", tc.relay, got, err, tc.want)
		}
	}
}

func TestRefusedOriginEndsRun(t *testing.T) {
	relay := newFakeRelay(t)
	opts := testOptions(t, relay)
	opts.Origin = "https://evil.example"
	tab := start(t, opts)
	if err := tab.wait(t); !errors.Is(err, ErrOriginRefused) {
		t.Fatalf("Run returned %v, want ErrOriginRefused", err)
	}
}
