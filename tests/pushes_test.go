package tests

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/tabrelay/tabrelay/protocol"
)

// pushedTab is a raw tab socket that reads the relay's messages by type.
type pushedTab struct {
	t    *testing.T
	ws   *websocket.Conn
	kept []map[string]any // read while waiting for another message
}

func openPushedTab(t *testing.T, relayURL, secret string) *pushedTab {
	t.Helper()
	ws, _, err := rawTab(t.Context(), strings.TrimPrefix(relayURL, "http://"), secret)
	if err != nil {
		t.Fatalf("tab: %v", err)
	}
	ws.SetReadLimit(protocol.MaxMessageBytes)
	t.Cleanup(func() { ws.CloseNow() })
	return &pushedTab{t: t, ws: ws}
}

func (p *pushedTab) send(v any) {
	p.t.Helper()
	data, _ := json.Marshal(v)
	if err := p.ws.Write(p.t.Context(), websocket.MessageText, data); err != nil {
		p.t.Fatal(err)
	}
}

// next returns the first message of type typ with ref ("" for a push),
// of those read before or, reading on, after: a push and an answer may come
// in either order.
func (p *pushedTab) next(typ, ref string) map[string]any {
	p.t.Helper()
	match := func(m map[string]any) bool { r, _ := m["ref"].(string); return m["type"] == typ && r == ref }
	for i, m := range p.kept {
		if match(m) {
			p.kept = append(p.kept[:i], p.kept[i+1:]...)
			return m
		}
	}
	ctx, cancel := context.WithTimeout(p.t.Context(), patience)
	defer cancel()
	for {
		_, data, err := p.ws.Read(ctx)
		if err != nil {
			p.t.Fatalf("waiting for %s: %v", typ, err)
		}
		var m map[string]any
		json.Unmarshal(data, &m)
		if m["type"] == protocol.TypeError {
			p.t.Fatalf("the relay answered an error: %s", data)
		}
		if match(m) {
			return m
		}
		p.kept = append(p.kept, m)
	}
}

// pushedIDs is the connection ids of a pushed connections message.
func pushedIDs(m map[string]any) []string {
	var ids []string
	for _, c := range m["connections"].([]any) {
		ids = append(ids, c.(map[string]any)["id"].(string))
	}
	return ids
}

// TestConnectionsArePushedToEveryTab: what one tab of a browser does to
// its connections (approve, set-scope, forget) reaches the browser's other
// tabs as a connections message without ref, so their panels never go
// stale; another browser hears nothing.
func TestConnectionsArePushedToEveryTab(t *testing.T) {
	r := startRelay(t, nil)
	secret := randomString()[:43]
	acting, other := openPushedTab(t, r.url, secret), openPushedTab(t, r.url, secret)
	stranger := openPushedTab(t, r.url, randomString()[:43])

	h := newHost(t, r.url)
	h.register()
	f := h.authorize()
	acting.send(map[string]any{"type": protocol.TypeApprove, "ref": "a1", "code": f.code, "scope": []map[string]any{{"tool": "whoami"}}})
	done := acting.next(protocol.TypeDone, "a1")
	conn := done["connection"].(map[string]any)["id"].(string)
	pushed := other.next(protocol.TypeConnections, "")
	if ids := pushedIDs(pushed); len(ids) != 1 || ids[0] != conn {
		t.Fatalf("pushed after approve: %v, want [%s]", pushed, conn)
	}
	acting.next(protocol.TypeConnections, "") // the acting tab hears it too

	acting.send(map[string]any{"type": protocol.TypeSetScope, "ref": "s1", "connection": conn,
		"scope": []map[string]any{{"tool": "counter", "actions": []string{"get"}}}})
	acting.next(protocol.TypeDone, "s1")
	pushed = other.next(protocol.TypeConnections, "")
	scope := pushed["connections"].([]any)[0].(map[string]any)["scope"]
	if b, _ := json.Marshal(scope); string(b) != `[{"actions":["get"],"tool":"counter"}]` {
		t.Fatalf("pushed after set-scope: scope %s", b)
	}

	acting.send(map[string]any{"type": protocol.TypeForget, "ref": "f1", "connection": conn})
	acting.next(protocol.TypeDone, "f1")
	if ids := pushedIDs(other.next(protocol.TypeConnections, "")); len(ids) != 0 {
		t.Fatalf("pushed after forget: %v, want none", ids)
	}

	// The other browser got no push: the first message it hears is the
	// answer to its own request.
	stranger.send(map[string]any{"type": protocol.TypeListConnections, "ref": "l1"})
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	_, data, err := stranger.ws.Read(ctx)
	if err != nil || !strings.Contains(string(data), `"ref":"l1"`) {
		t.Fatalf("another browser's tab heard %s (%v)", data, err)
	}
}
