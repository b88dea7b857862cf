package tests

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/tools/txtar"

	"github.com/tabrelay/tabrelay/protocol"
)

// TestTabTranscripts fixes the tab protocol's exchanges as a tab sees
// them, the way TestTranscripts fixes the MCP ones. Each
// testdata/tab-*.txtar is a list of steps, each a section "-- N who --"
// with header lines, a blank line and what is done. "Reads: K" says how
// many messages the relay sends the tab because of the step (none without
// it), "Closes: yes" that the relay then closes the socket. What is done:
//
//   - tab: the message the tab sends, with $secret, $code, $call and
//     $connection standing for the browser's secret, the connect code of
//     the host's request, the id of the last call and of the last
//     connection the relay named;
//   - host: authorize (register and open a connect request: $code), token
//     (follow the approved request to its tokens), call TOOL ARGUMENTS
//     (tools/call over MCP, answered later) or answer (wait for that
//     call's answer, written to "-- N answer --");
//   - node: shutdown (the node drains).
//
// The K messages the relay sends, and its close, go to "-- N relay --",
// one per line, with what changes from run to run written as
// placeholders: the same $-names, $pairing, times as now±seconds on the
// relay's clock (which does not move), and a drain's random delay as "…".
// go test ./tests -run TestTabTranscripts -update writes the answers anew.
func TestTabTranscripts(t *testing.T) {
	replayTranscripts(t, "testdata/tab-*.txtar", "TestTabTranscripts", func(t *testing.T, files []txtar.File) []txtar.File {
		p := newTabPlayer(t)
		var out []txtar.File
		for _, f := range files {
			num, who, _ := strings.Cut(f.Name, " ")
			if who != "tab" && who != "host" && who != "node" {
				continue // an answer of the last run: written anew
			}
			answer, relay := p.step(who, f.Data)
			out = append(out, f)
			if answer != nil {
				out = append(out, txtar.File{Name: num + " answer", Data: answer})
			}
			if relay != nil {
				out = append(out, txtar.File{Name: num + " relay", Data: relay})
			}
		}
		return out
	})
}

// tabPlayer plays a transcript's steps: one tab of one browser on a relay
// of its own, and a host.
type tabPlayer struct {
	t      *testing.T
	r      *relay
	ws     *websocket.Conn
	h      *host
	f      *flow
	mcp    *mcpClient
	answer chan rpcReply
	vars   map[string]string // $name → its value in this run
}

func newTabPlayer(t *testing.T) *tabPlayer {
	r := startRelay(t, nil)
	secret := make([]byte, 32)
	rand.Read(secret)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(r.url, "http")+"/tab", &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {origin}}})
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(-1)
	t.Cleanup(func() { ws.CloseNow() })
	return &tabPlayer{t: t, r: r, ws: ws, h: newHost(t, r.url), vars: map[string]string{"$secret": base64.RawURLEncoding.EncodeToString(secret)}}
}

var (
	readsHeader  = regexp.MustCompile(`(?m)^Reads: (\d+)$`)
	closesHeader = regexp.MustCompile(`(?m)^Closes: yes$`)
)

// step does one step and returns the host's answer (for answer) and the
// relay's messages to the tab that it caused.
func (p *tabPlayer) step(who string, data []byte) (answer, relay []byte) {
	t := p.t
	head, body, _ := bytes.Cut(append([]byte("\n"), data...), []byte("\n\n")) // no header lines: data starts with the blank one
	reads := 0
	if m := readsHeader.FindSubmatch(head); m != nil {
		reads, _ = strconv.Atoi(string(m[1]))
	}
	cmd := strings.TrimSpace(string(body))
	switch who {
	case "tab":
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		if err := p.ws.Write(ctx, websocket.MessageText, []byte(p.fill(cmd))); err != nil {
			t.Fatalf("send %s: %v", cmd, err)
		}
	case "node":
		if cmd != "shutdown" {
			t.Fatalf("node step %q: only shutdown", cmd)
		}
		go p.r.node.Shutdown(context.Background())
	default:
		answer = p.host(cmd)
	}
	// What one step causes may come in either order (an answer from the
	// request's goroutine, a push from the pairing): all are read, and
	// what they name learnt, before any is written; they are written
	// sorted.
	msgs := make([]map[string]any, reads)
	for i := range msgs {
		msgs[i] = p.readRelay()
	}
	var lines []string
	for _, m := range msgs {
		lines = append(lines, p.normalized(m))
	}
	slices.Sort(lines)
	if closesHeader.Match(head) {
		lines = append(lines, p.readClose())
	}
	if len(lines) == 0 {
		return answer, nil
	}
	return answer, []byte(strings.Join(lines, "\n") + "\n")
}

// host does what a host step says.
func (p *tabPlayer) host(cmd string) []byte {
	t := p.t
	verb, rest, _ := strings.Cut(cmd, " ")
	switch verb {
	case "authorize":
		p.h.register()
		p.f = p.h.authorize()
		p.vars["$code"] = p.f.code
	case "token":
		st := p.h.status(p.f)
		status, tokens := p.h.exchange(p.f, p.h.codeFrom(p.f, st["redirect"]))
		if status != http.StatusOK {
			t.Fatalf("token: %d %v", status, tokens)
		}
		p.mcp = &mcpClient{t: t, url: p.r.url + "/", token: tokens["access_token"].(string)}
	case "call":
		tool, args, _ := strings.Cut(rest, " ")
		var arguments map[string]any
		if err := json.Unmarshal([]byte(args), &arguments); err != nil {
			t.Fatalf("call %s: %v", rest, err)
		}
		p.answer = make(chan rpcReply, 1)
		go func() {
			p.answer <- p.mcp.send("tools/call", map[string]any{"name": tool, "arguments": arguments}, true, nil)
		}()
	case "answer":
		var rep rpcReply
		select {
		case rep = <-p.answer:
		case <-time.After(patience):
			t.Fatalf("the call was not answered\n%s", p.r.logs.String())
		}
		var b strings.Builder
		b.WriteString("Status: " + http.StatusText(rep.status) + "\n\n")
		for _, e := range rep.events {
			b.WriteString(p.normalized(e) + "\n")
		}
		reply := map[string]any{}
		if rep.result != nil {
			reply["result"] = rep.result
		}
		if rep.err != nil {
			reply["error"] = rep.err
		}
		b.WriteString(p.normalized(reply) + "\n")
		return []byte(b.String())
	default:
		t.Fatalf("host step %q: authorize, token, call or answer", cmd)
	}
	return nil
}

// readRelay reads the next message the relay sends the tab and learns the
// values it names.
func (p *tabPlayer) readRelay() map[string]any {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	_, data, err := p.ws.Read(ctx)
	if err != nil {
		p.t.Fatalf("read the relay's next message: %v", err)
	}
	var msg map[string]any
	if err := json.Unmarshal(data, &msg); err != nil {
		p.t.Fatalf("the relay sent %q: %v", data, err)
	}
	learn := func(name string, v any) {
		if s, ok := v.(string); ok && s != "" {
			p.vars[name] = s
		}
	}
	switch msg["type"] {
	case "welcome":
		learn("$pairing", msg["pairing"])
	case "call":
		learn("$call", msg["id"])
	case "done":
		if c, ok := msg["connection"].(map[string]any); ok {
			learn("$connection", c["id"])
		}
	}
	return msg
}

// readClose reads the relay's close of the socket.
func (p *tabPlayer) readClose() string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	_, data, err := p.ws.Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) {
		p.t.Fatalf("the relay sent %q and %v, not a close", data, err)
	}
	return fmt.Sprintf("closed %d (%s)", ce.Code, protocol.CloseCode(ce.Code))
}

// fill writes this run's values for the $-names in a tab's message.
func (p *tabPlayer) fill(s string) string {
	for name, v := range p.vars {
		s = strings.ReplaceAll(s, name, v)
	}
	return s
}

// timeKeys are the fields that hold a time (Unix ms) on the relay's clock.
var timeKeys = map[string]bool{"deadline": true, "redelivery": true, "createdAt": true, "lastUsedAt": true, "expiresAt": true, "startedAt": true}

// normalized writes v as one line of JSON with this run's values as their
// $-names and times relative to the relay's clock.
func (p *tabPlayer) normalized(v any) string {
	now := p.r.clock.Now().UnixMilli()
	var walk func(any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if n, ok := x.(float64); ok && timeKeys[k] && n > 0 {
					v[k] = fmt.Sprintf("now%+ds", (int64(n)-now)/1000)
					continue
				}
				if k == "reconnectAfterMs" {
					v[k] = "…" // drawn at random from the drain window
					continue
				}
				v[k] = walk(x)
			}
		case []any:
			for i := range v {
				v[i] = walk(v[i])
			}
		}
		return v
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(walk(v))
	s := strings.TrimSuffix(buf.String(), "\n")
	for name, val := range p.vars {
		s = strings.ReplaceAll(s, val, name)
	}
	for _, r := range volatile {
		s = r.re.ReplaceAllString(s, r.with)
	}
	return s
}
