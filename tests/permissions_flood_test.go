package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tabrelay/tabrelay/internal/testwait"
	"github.com/tabrelay/tabrelay/protocol"
)

// answeringTab is a raw tab that answers the relay's pings and
// permissions queries (every tool "runs"), counts the queries, keeps the
// answers to its own requests, and notes how its socket ended.
type answeringTab struct {
	ws      *websocket.Conn
	queries atomic.Int64
	answer  atomic.Value // the permission it answers for every tool
	answers chan map[string]any
	calls   chan map[string]any       // the relay's calls and cancels
	ended   chan websocket.StatusCode // the close code, once the socket ended
}

func openAnsweringTab(t *testing.T, relayURL, secret string) *answeringTab {
	t.Helper()
	ws, _, err := rawTab(t.Context(), strings.TrimPrefix(relayURL, "http://"), secret)
	if err != nil {
		t.Fatalf("tab: %v", err)
	}
	ws.SetReadLimit(protocol.MaxMessageBytes)
	t.Cleanup(func() { ws.CloseNow() })
	a := &answeringTab{ws: ws, answers: make(chan map[string]any, 16), calls: make(chan map[string]any, 16),
		ended: make(chan websocket.StatusCode, 1)}
	a.answer.Store(protocol.PermissionRuns)
	go a.run(context.Background())
	return a
}

func (a *answeringTab) run(ctx context.Context) {
	for {
		_, data, err := a.ws.Read(ctx)
		if err != nil {
			a.ended <- websocket.CloseStatus(err)
			return
		}
		var m map[string]any
		_ = json.Unmarshal(data, &m)
		switch m["type"] {
		case protocol.TypePing:
			a.write(map[string]any{"type": protocol.TypePong})
		case protocol.TypePermissionsQuery:
			a.queries.Add(1)
			tools := map[string]string{}
			for _, name := range m["tools"].([]any) {
				tools[name.(string)] = a.answer.Load().(string)
			}
			a.write(map[string]any{"type": protocol.TypePermissions, "id": m["id"], "tools": tools})
		case protocol.TypeCall, protocol.TypeCancel:
			a.calls <- m
		default:
			if m["ref"] != nil {
				a.answers <- m
			}
		}
	}
}

func (a *answeringTab) write(v any) {
	data, _ := json.Marshal(v)
	_ = a.ws.Write(context.Background(), websocket.MessageText, data)
}

// approve approves the connect request of code in this tab with scope.
func (a *answeringTab) approve(t *testing.T, code string, scope ...map[string]any) map[string]any {
	t.Helper()
	return a.request(t, map[string]any{"type": protocol.TypeApprove, "code": code, "scope": scope})
}

// request sends one of the tab's requests and returns its done.
func (a *answeringTab) request(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	m["ref"] = fmt.Sprint(m["type"])
	a.write(m)
	for {
		select {
		case d := <-a.answers:
			if d["ref"] != m["ref"] {
				continue // a push's list, or another answer
			}
			if d["type"] != protocol.TypeDone {
				t.Fatalf("%s: %v", m["type"], d)
			}
			return d
		case <-time.After(patience):
			t.Fatalf("%s: no answer", m["type"])
		}
	}
}

// next returns the next call or cancel the tab was sent.
func (a *answeringTab) next(t *testing.T) map[string]any {
	t.Helper()
	select {
	case m := <-a.calls:
		return m
	case <-time.After(patience):
		t.Fatal("no call or cancel came")
	}
	return nil
}

// connectHost approves a host's connection in the tab and returns its
// access token and connection id.
func connectHost(t *testing.T, r *relay, tab *answeringTab, scope ...map[string]any) (string, string) {
	t.Helper()
	h := newHost(t, r.url)
	h.register()
	f := h.authorize()
	done := tab.approve(t, f.code, scope...)
	st := h.status(f)
	status, tokens := h.exchange(f, h.codeFrom(f, st["redirect"]))
	if status != http.StatusOK {
		t.Fatalf("token: %d %v", status, tokens)
	}
	return tokens["access_token"].(string), done["connection"].(map[string]any)["id"].(string)
}

// TestToolsListFloodLeavesTheTabConnected (issue 23 §2): 2,000 tools/list
// of one token sent the tab 2,000 permissions queries, and its 2,000
// answers counted against its own rate limit: the relay closed it 4004
// too_fast for answering the relay's questions. Now its answers are paid
// by the questions, identical questions share one, and an answer serves
// the next ones for a while: the tab stays, and every list carries what
// the tab answered.
func TestToolsListFloodLeavesTheTabConnected(t *testing.T) {
	r := startRelay(t, nil)
	tab := openAnsweringTab(t, r.url, randomString()[:43])
	token, _ := connectHost(t, r, tab, map[string]any{"tool": "whoami"}, map[string]any{"tool": "counter", "actions": []string{"get"}})

	const lists, workers = 2000, 32
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for i := next.Add(1); i <= lists; i = next.Add(1) {
				if err := listTools(r.url, token, i, "runs without asking"); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	select {
	case code := <-tab.ended:
		t.Fatalf("the tab was closed (%d) by the flood", code)
	default:
	}
	tab.write(map[string]any{"type": protocol.TypeListConnections, "ref": "still-here"})
	if m := <-tab.answers; m["ref"] != "still-here" || m["type"] != protocol.TypeConnections {
		t.Fatalf("after the flood the tab heard %v", m)
	}
	t.Logf("%d lists asked the tab %d questions", lists, tab.queries.Load())

	// The person changes their settings: the answer kept is forgotten,
	// and the next list says what the tab answers now.
	tab.answer.Store(protocol.PermissionAsks)
	tab.write(map[string]any{"type": protocol.TypePermissionsChanged})
	testwait.Eventually(t, func() bool { return listTools(r.url, token, lists+1, "the person is asked") == nil },
		"a list after the settings changed says what the tab answers now")
}

// listTools asks tools/list with token and checks that each tool says what
// the tab answered (want).
func listTools(relay, token string, id int64, want string) error {
	rep, err := postMCP(context.Background(), http.DefaultClient, relay, token, int(id), "tools/list", nil)
	if err != nil {
		return err
	}
	var out struct {
		Result struct {
			Tools []struct {
				Name        string `json:"name"`
				Description string `json:"description"`
			} `json:"tools"`
		} `json:"result"`
	}
	if rep.status != http.StatusOK || json.Unmarshal([]byte(rep.rawBody), &out) != nil || len(out.Result.Tools) != 2 {
		return fmt.Errorf("list %d: %d %s", id, rep.status, rep.rawBody)
	}
	for _, tl := range out.Result.Tools {
		if !strings.Contains(tl.Description, want) {
			return fmt.Errorf("list %d: %s does not say what the tab answered: %q", id, tl.Name, tl.Description)
		}
	}
	return nil
}
