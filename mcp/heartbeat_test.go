package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/protocol"
)

// heldCaller sends its events, then waits for the test at each step of
// release (an event, then a receive), then answers.
type heldCaller struct {
	first   []protocol.CallEvent
	release chan protocol.CallEvent // each receive: that event, then the next wait; closed: answer
}

func (c heldCaller) Call(ctx context.Context, _ protocol.CallRequest, events func(protocol.CallEvent)) protocol.Outcome {
	for _, e := range c.first {
		events(e)
	}
	for {
		select {
		case e, ok := <-c.release:
			if !ok {
				return protocol.Outcome{Kind: protocol.Answered, Result: protocol.TabResult{Data: json.RawMessage(`"done"`)}}
			}
			events(e)
		case <-ctx.Done():
			return protocol.Outcome{Kind: protocol.Cancelled}
		}
	}
}

func (heldCaller) Permissions(context.Context, string, protocol.Connection, []string) (map[string]string, bool) {
	return nil, false
}

// sseReader reads a call's event stream message by message.
type sseReader struct {
	t  *testing.T
	rd *bufio.Reader
}

// next is the stream's next message (a JSON-RPC message), or ": comment"
// for a comment; "" at its end.
func (r *sseReader) next() (map[string]any, string) {
	for {
		line, err := r.rd.ReadString('\n')
		if err != nil {
			return nil, ""
		}
		line = strings.TrimRight(line, "\n")
		if strings.HasPrefix(line, ":") {
			return nil, line
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var m map[string]any
			if json.Unmarshal([]byte(data), &m) != nil {
				r.t.Fatalf("not JSON on the stream: %q", data)
			}
			return m, ""
		}
	}
}

// heldCall starts a streamed tools/call on a server with keepAlive, with
// meta as its _meta, and returns its stream.
func heldCall(t *testing.T, c Caller, keepAlive time.Duration, meta string) *sseReader {
	t.Helper()
	ts := streamServer(t, c, keepAlive)
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"counter","arguments":{"action":"get"},"_meta":` + meta + `}}`
	req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer tra_x")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return &sseReader{t: t, rd: bufio.NewReader(resp.Body)}
}

// TestProgressHeartbeatWhileTheCallWaits (issue 25 item 1): while a call
// waits, a host that sent a progress token hears, at every keep-alive, a
// progress notification that says what the call waits for (the person,
// or the tab), growing every time and never reaching the tab's total;
// after the result, nothing.
func TestProgressHeartbeatWhileTheCallWaits(t *testing.T) {
	release := make(chan protocol.CallEvent)
	c := heldCaller{first: []protocol.CallEvent{
		{Kind: protocol.CallProgress, Progress: 2, Total: 4, Message: "half"},
		{Kind: protocol.CallAsking},
	}, release: release}
	st := heldCall(t, c, 20*time.Millisecond, `{"progressToken":"p7"}`)
	last := 0.0
	progress := func() string {
		t.Helper()
		for {
			m, comment := st.next()
			if comment != "" {
				t.Fatalf("a keep-alive comment to a host that sent a progress token: %q", comment)
			}
			if m == nil {
				t.Fatal("the stream ended early")
			}
			if m["method"] == "notifications/message" {
				continue
			}
			p, _ := m["params"].(map[string]any)
			if m["method"] != "notifications/progress" || p["progressToken"] != "p7" {
				t.Fatalf("got %v, want progress for p7", m)
			}
			v, _ := p["progress"].(float64)
			if v <= last || v >= 4 || p["total"] != 4.0 {
				t.Fatalf("progress %v of %v after %v: it must grow, below the tab's total", v, p["total"], last)
			}
			last = v
			return p["message"].(string)
		}
	}
	if m := progress(); !strings.Contains(m, "half") {
		t.Fatalf("first progress %q, want the tab's", m)
	}
	if m := progress(); m != askingMessage {
		t.Fatalf("second progress %q, want the person being asked", m)
	}
	for range 3 {
		if m := progress(); m != stillAskingMessage {
			t.Fatalf("heartbeat %q while the person is asked, want %q", m, stillAskingMessage)
		}
	}
	release <- protocol.CallEvent{Kind: protocol.CallAnswered}
	for m := progress(); m != answeredMessage; m = progress() {
		if m != stillAskingMessage {
			t.Fatalf("progress %q before the answer's", m)
		}
	}
	for range 3 {
		if m := progress(); m != stillRunningMessage {
			t.Fatalf("heartbeat %q after the answer, want %q", m, stillRunningMessage)
		}
	}
	close(release)
	for {
		m, _ := st.next()
		if m == nil {
			t.Fatal("the stream ended without the result")
		}
		if m["id"] == 7.0 {
			break
		}
	}
	if m, comment := st.next(); m != nil || comment != "" {
		t.Fatalf("after the result: %v %q", m, comment)
	}
}

// TestNoProgressWithoutAToken: a host that sent no progress token gets
// keep-alive comments while a call waits, never a progress notification
// (the spec allows progress only for a token the request carried).
func TestNoProgressWithoutAToken(t *testing.T) {
	release := make(chan protocol.CallEvent)
	c := heldCaller{first: []protocol.CallEvent{{Kind: protocol.CallAsking}}, release: release}
	st := heldCall(t, c, 20*time.Millisecond, `{}`)
	comments := 0
	for comments < 3 {
		m, comment := st.next()
		switch {
		case comment != "":
			comments++
		case m == nil:
			t.Fatal("the stream ended early")
		case m["method"] == "notifications/progress":
			t.Fatalf("progress without a token: %v", m)
		}
	}
	close(release)
	for {
		m, comment := st.next()
		if m == nil && comment == "" {
			return
		}
		if m != nil && m["method"] == "notifications/progress" {
			t.Fatalf("progress without a token: %v", m)
		}
	}
}
