package headless

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/protocol"
)

// before describes one message a fixture sends before its result.
func (m message) before() string {
	switch m.Type {
	case protocol.TypeProgress:
		p := -1.0
		if m.Progress != nil {
			p = *m.Progress
		}
		return fmt.Sprintf("progress %s %g/%g", m.ID, p, m.Total)
	case protocol.TypeLog:
		return fmt.Sprintf("log %s %s %s", m.ID, m.Level, m.Data)
	case protocol.TypePermissionsChanged:
		return "permissions-changed"
	}
	return fmt.Sprintf("%s %s%s", m.Type, m.ID, m.By)
}

// resultAfter returns the result of call id and what came before it.
func (s *tabSocket) resultAfter(id string) (protocol.TabResult, []string) {
	s.t.Helper()
	var before []string
	for {
		m := s.next()
		if m.Type == protocol.TypeResult {
			if m.ID != id {
				s.t.Fatalf("result of %s, want one of %s", m.ID, id)
			}
			return m.Result, before
		}
		before = append(before, m.before())
	}
}

func conformanceOptions(t *testing.T, relay *fakeRelay) Options {
	opts := testOptions(t, relay)
	opts.Bundle = protocol.ConformanceBundle()
	opts.ExecLog = filepath.Join(t.TempDir(), "exec.log")
	return opts
}

func TestConformanceFixtures(t *testing.T) {
	relay := newFakeRelay(t)
	opts := conformanceOptions(t, relay)
	tab := start(t, opts)
	s := relay.accept(t)
	if s.hello.Bundle != "conformance-1" {
		t.Fatalf("hello bundle %q, want conformance-1", s.hello.Bundle)
	}
	png := []protocol.Media{{MimeType: "image/png", Data: fixturePNG}}
	tests := []struct {
		tool, args string
		want       protocol.TabResult
		before     []string // what comes before the result, with "ID" for the call id
	}{
		{tool: "test_simple_text", want: protocol.TabResult{Data: json.RawMessage(`"This is a simple text response for testing."`)}},
		{tool: "test_image_content", args: `{}`, want: protocol.TabResult{Data: json.RawMessage(`"Image content"`), Images: png}},
		{tool: "test_audio_content", args: `{}`, want: protocol.TabResult{Data: json.RawMessage(`"Audio content"`),
			Audio: []protocol.Media{{MimeType: "audio/wav", Data: fixtureWAV}}}},
		{tool: "test_embedded_resource", args: `{}`, want: protocol.TabResult{Data: json.RawMessage(`"Embedded resource content"`),
			Resources: []protocol.EmbeddedResource{{URI: "test://embedded-resource", MimeType: "text/plain",
				Text: "This is an embedded resource content."}}}},
		{tool: "test_multiple_content_types", args: `{}`, want: protocol.TabResult{Data: json.RawMessage(`"Multiple content types test:"`),
			Images: png, Resources: []protocol.EmbeddedResource{{URI: "test://mixed-content-resource",
				MimeType: "application/json", Text: `{"test":"data","value":123}`}}}},
		{tool: "test_tool_with_logging", args: `{}`, want: protocol.TabResult{Data: json.RawMessage(`"Tool with logging executed successfully"`)},
			before: []string{`log ID info "Tool execution started"`, `log ID info "Tool processing data"`,
				`log ID info "Tool execution completed"`}},
		{tool: "test_logging_tool", args: `{}`, want: protocol.TabResult{Data: json.RawMessage(`"Logged"`)},
			before: []string{`log ID info "Logging tool ran"`}},
		{tool: "test_tool_with_progress", args: `{}`, want: protocol.TabResult{Data: json.RawMessage(`"Progress complete"`)},
			before: []string{"progress ID 0/100", "progress ID 50/100", "progress ID 100/100"}},
		{tool: "test_error_handling", args: `{}`, want: protocol.TabResult{Error: "This tool intentionally returns an error for testing"}},
		{tool: "test_trigger_tool_change", args: `{}`, want: protocol.TabResult{Data: json.RawMessage(`"Tools changed"`)},
			before: []string{"permissions-changed"}},
		{tool: "whoami", want: protocol.TabResult{Error: `This tab has no tool "whoami".`}},
	}
	for _, tc := range tests {
		t.Run(tc.tool, func(t *testing.T) {
			s.t = t
			id := "fx-" + tc.tool
			began := time.Now()
			s.call(id, tc.tool, tc.args)
			res, before := s.resultAfter(id)
			if !reflect.DeepEqual(res, tc.want) {
				t.Fatalf("result %+v, want %+v", res, tc.want)
			}
			want := make([]string, len(tc.before))
			for i, b := range tc.before {
				want[i] = strings.Replace(b, "ID", id, 1)
			}
			if !reflect.DeepEqual(before, want) && (len(before) > 0 || len(want) > 0) {
				t.Fatalf("before the result %q, want %q", before, want)
			}
			if len(tc.before) == 3 {
				if took := time.Since(began); took < 2*fixtureStep {
					t.Fatalf("three messages in %v, want them %v apart", took, fixtureStep)
				}
			}
			// A redelivery is answered from memory: the result again,
			// without the messages of the run.
			s.call(id, tc.tool, tc.args)
			if again, before := s.resultAfter(id); !reflect.DeepEqual(again, res) || len(before) > 0 {
				t.Fatalf("redelivery answered %+v after %q, want the result alone", again, before)
			}
		})
	}
	for id, n := range tab.Executions() {
		if n != 1 {
			t.Errorf("%s ran %d times, want 1", id, n)
		}
	}
	if lines := execLines(t, opts.ExecLog); len(lines) != len(tests) {
		t.Errorf("exec log %q, want %d runs", lines, len(tests))
	}
}

func TestPermissionsChanged(t *testing.T) {
	relay := newFakeRelay(t)
	tab := start(t, testOptions(t, relay))
	s := relay.accept(t)
	if err := tab.WaitConnected(t.Context()); err != nil {
		t.Fatal(err)
	}
	tab.PermissionsChanged()
	if m := s.next(); m.Type != protocol.TypePermissionsChanged {
		t.Fatalf("got %+v, want permissions-changed", m)
	}
}

// TestFixtureMessagesSurviveAReconnect closes the socket while a fixture
// runs: what it sends afterwards, result included, comes on the next
// socket, in order, and the call runs once.
func TestFixtureMessagesSurviveAReconnect(t *testing.T) {
	relay := newFakeRelay(t)
	// A long pause: the close must reach the tab before the call is done.
	tab := start(t, conformanceOptions(t, relay), func(tab *Tab) { tab.pause = 500 * time.Millisecond })
	first := relay.accept(t)
	first.call("p1", "test_tool_with_progress", `{}`)
	if m := first.next(); m.before() != "progress p1 0/100" {
		t.Fatalf("first message %q, want progress 0", m.before())
	}
	first.close(protocol.CloseShutdown)
	second := relay.accept(t)
	res, before := second.resultAfter("p1")
	if string(res.Data) != `"Progress complete"` {
		t.Fatalf("result %+v, want Progress complete", res)
	}
	// 50 may have gone out on the first socket before it closed.
	if want := []string{"progress p1 50/100", "progress p1 100/100"}; !reflect.DeepEqual(before, want) &&
		!reflect.DeepEqual(before, want[1:]) {
		t.Fatalf("on the new socket before the result %q, want %q", before, want)
	}
	second.call("p1", "test_tool_with_progress", `{}`)
	if again, before := second.resultAfter("p1"); !reflect.DeepEqual(again, res) || len(before) > 0 {
		t.Fatalf("redelivery answered %+v after %q, want the result alone", again, before)
	}
	if n := tab.Executions()["p1"]; n != 1 {
		t.Fatalf("p1 ran %d times, want 1", n)
	}
}

func TestCancelledFixtureSendsNoMore(t *testing.T) {
	relay := newFakeRelay(t)
	// A long pause: the cancel must reach the tab before its next line.
	const pause = 500 * time.Millisecond
	start(t, conformanceOptions(t, relay), func(tab *Tab) { tab.pause = pause })
	s := relay.accept(t)
	s.call("l1", "test_tool_with_logging", `{}`)
	if m := s.next(); m.before() != `log l1 info "Tool execution started"` {
		t.Fatalf("first message %q, want the first log line", m.before())
	}
	s.cancel("l1")
	if m, ok := s.nextWithin(3 * pause); ok { // an uncancelled call is done within 2
		t.Fatalf("after a cancel %q, want nothing", m.before())
	}
}
