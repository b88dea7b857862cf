package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/internal/syncbuf"
)

// tsHost is the official MCP TypeScript client as a local host runs it
// (tests/node/demo-client.mjs), driven by a test that plays the person in
// a real browser: it registers, asks for authorization (authorizeURL), and
// once the person approved and the browser went to its loopback redirect
// URI, it holds a connection and runs the test's calls.
type tsHost struct {
	t            testing.TB
	stdin        io.WriteCloser
	stderr       *syncbuf.Buffer
	authorizeURL string

	mu      sync.Mutex
	next    int
	replies map[int]chan tsReply
	events  chan map[string]any
}

// tsReply is the client's answer to one command.
type tsReply struct {
	ID       int            `json:"id"`
	OK       bool           `json:"ok"`
	Result   map[string]any `json:"result"`
	Error    string         `json:"error"`
	Statuses []int          `json:"statuses"`
}

// text is a tools/call result's text content, joined.
func (r tsReply) text() string {
	var parts []string
	content, _ := r.Result["content"].([]any)
	for _, c := range content {
		if m, _ := c.(map[string]any); m["type"] == "text" {
			parts = append(parts, fmt.Sprint(m["text"]))
		}
	}
	return strings.Join(parts, "\n")
}

func (r tsReply) isError() bool { return !r.OK || r.Result["isError"] == true }

// startTSHost starts the client against relay in era ("legacy" or a
// version) and waits for its authorization URL.
func startTSHost(t testing.TB, relay, era, clientName string) *tsHost {
	t.Helper()
	node, script := tsClientScript(t, "demo-client.mjs")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = filepath.Dir(script)
	cmd.Env = append(os.Environ(), "TABRELAY_URL="+relay, "TABRELAY_ERA="+era, "TABRELAY_CLIENT_NAME="+clientName)
	h := &tsHost{t: t, stderr: &syncbuf.Buffer{}, replies: map[int]chan tsReply{}, events: make(chan map[string]any, 8)}
	cmd.Stderr = h.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if h.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { h.stdin.Close(); cancel(); <-done })
	go func() {
		defer close(done)
		defer cmd.Wait()
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			if _, ok := line["event"]; ok {
				h.events <- line
				continue
			}
			var rep tsReply
			if json.Unmarshal(sc.Bytes(), &rep) != nil {
				continue
			}
			h.mu.Lock()
			ch := h.replies[rep.ID]
			delete(h.replies, rep.ID)
			h.mu.Unlock()
			if ch != nil {
				ch <- rep
			}
		}
	}()
	ev := h.event("authorize")
	h.authorizeURL, _ = ev["url"].(string)
	return h
}

// event waits for the client's next event, which must be kind.
func (h *tsHost) event(kind string) map[string]any {
	h.t.Helper()
	select {
	case ev := <-h.events:
		if ev["event"] != kind {
			h.t.Fatalf("the TypeScript client: %v, want the %s event\n%s", ev, kind, h.stderr)
		}
		return ev
	case <-time.After(time.Minute):
		h.t.Fatalf("the TypeScript client sent no %s event\n%s", kind, h.stderr)
	}
	return nil
}

// send starts a command and returns its id and where its reply arrives.
func (h *tsHost) send(cmd map[string]any) (int, <-chan tsReply) {
	h.mu.Lock()
	h.next++
	id := h.next
	ch := make(chan tsReply, 1)
	h.replies[id] = ch
	h.mu.Unlock()
	cmd["id"] = id
	b, _ := json.Marshal(cmd)
	if _, err := h.stdin.Write(append(b, '\n')); err != nil {
		h.t.Fatalf("the TypeScript client's stdin: %v", err)
	}
	return id, ch
}

// start begins a tools/call; wait takes its reply.
func (h *tsHost) start(name string, args map[string]any) (int, <-chan tsReply) {
	if args == nil {
		args = map[string]any{}
	}
	return h.send(map[string]any{"op": "call", "name": name, "arguments": args})
}

// call runs a tools/call to its end.
func (h *tsHost) call(name string, args map[string]any) tsReply {
	h.t.Helper()
	_, ch := h.start(name, args)
	return h.wait(ch)
}

// cancel has the client cancel call id (notifications/cancelled).
func (h *tsHost) cancel(id int) {
	h.t.Helper()
	_, ch := h.send(map[string]any{"op": "cancel", "target": id})
	h.wait(ch)
}

// list runs a tools/list.
func (h *tsHost) list() tsReply {
	h.t.Helper()
	_, ch := h.send(map[string]any{"op": "list"})
	return h.wait(ch)
}

// read runs a resources/read.
func (h *tsHost) read(uri string) tsReply {
	h.t.Helper()
	_, ch := h.send(map[string]any{"op": "read", "uri": uri})
	return h.wait(ch)
}

func (h *tsHost) wait(ch <-chan tsReply) tsReply {
	h.t.Helper()
	select {
	case rep := <-ch:
		return rep
	case <-time.After(2 * time.Minute):
		h.t.Fatalf("the TypeScript client answered nothing\n%s", h.stderr)
	}
	return tsReply{}
}
