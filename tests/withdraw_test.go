package tests

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tabrelay/tabrelay/protocol"
)

// callCounter runs tools/call counter with action for token, and sends
// what the host read on the returned channel.
func callCounter(relay, token, action string) <-chan string {
	out := make(chan string, 1)
	go func() {
		rep, err := postMCP(context.Background(), http.DefaultClient, relay, token, nextRPCID(), "tools/call",
			map[string]any{"name": "counter", "arguments": map[string]any{"action": action}})
		if err != nil {
			out <- err.Error()
			return
		}
		out <- rep.rawBody
	}()
	return out
}

// askingCall waits for the tab's call and says the person is being asked
// about it (the confirm card is up); it returns the call's id.
func askingCall(t *testing.T, tab *answeringTab) string {
	t.Helper()
	m := tab.next(t)
	if m["type"] != protocol.TypeCall {
		t.Fatalf("the tab got %v, want a call", m)
	}
	id := m["id"].(string)
	tab.write(map[string]any{"type": protocol.TypeAsking, "id": id})
	return id
}

// result answers call id as if the person allowed it and it ran.
func (a *answeringTab) result(id string) {
	a.write(map[string]any{"type": protocol.TypeResult, "id": id, "result": map[string]any{"data": map[string]any{"counter": 0}}})
}

// withdrawnAs checks that what the host read is the tool error saying why
// its call was withdrawn, not the tab's result.
func withdrawnAs(t *testing.T, got, why string) {
	t.Helper()
	var rep struct {
		Result struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if json.Unmarshal([]byte(got), &rep) != nil || !rep.Result.IsError || len(rep.Result.Content) == 0 ||
		!strings.Contains(rep.Result.Content[0].Text, why) || strings.Contains(got, `\"counter\":0`) {
		t.Fatalf("the host read %s, want the withdrawal (%q)", got, why)
	}
}

// TestForgetOrNarrowingWithdrawsACallInFlight (issue 23 §2): a call waiting
// on the person's confirm card stayed after the person forgot its
// connection, and "Allow once" then ran it and the forgotten host got a
// success. Now a narrowing or a Forget withdraws the connection's calls
// from the tab (a cancel: the card goes), the host reads why, and a result
// the tab sends after the Forget is refused.
func TestForgetOrNarrowingWithdrawsACallInFlight(t *testing.T) {
	r := startRelay(t, nil)
	tab := openAnsweringTab(t, r.url, randomString()[:43])
	token, conn := connectHost(t, r, tab, map[string]any{"tool": "counter", "actions": []string{"get", "reset"}})

	// Narrowed while the card is up: the call is withdrawn from the tab.
	host := callCounter(r.url, token, "reset")
	id := askingCall(t, tab)
	tab.request(t, map[string]any{"type": protocol.TypeSetScope, "connection": conn,
		"scope": []map[string]any{{"tool": "counter", "actions": []string{"get", "reset"}}, {"tool": "whoami"}}})
	tab.request(t, map[string]any{"type": protocol.TypeSetScope, "connection": conn,
		"scope": []map[string]any{{"tool": "counter", "actions": []string{"get"}}}})
	if m := tab.next(t); m["type"] != protocol.TypeCancel || m["id"] != id {
		t.Fatalf("after the narrowing the tab got %v, want the call's cancel", m)
	}
	withdrawnAs(t, <-host, "narrowed this connection")

	// Widened again (a widening withdraws nothing), then forgotten while
	// the card is up.
	tab.request(t, map[string]any{"type": protocol.TypeSetScope, "connection": conn,
		"scope": []map[string]any{{"tool": "counter", "actions": []string{"get", "reset"}}}})
	host = callCounter(r.url, token, "reset")
	id = askingCall(t, tab)
	tab.request(t, map[string]any{"type": protocol.TypeForget, "connection": conn})
	if m := tab.next(t); m["type"] != protocol.TypeCancel || m["id"] != id {
		t.Fatalf("after the forget the tab got %v, want the call's cancel", m)
	}
	tab.result(id) // "Allow once" on a card that was withdrawn: too late
	withdrawnAs(t, <-host, "ended this connection")
}

// TestAResultAfterTheForgetIsRefused: the tab's answer comes after the
// Forget was done but before the relay's cancel reached the tab; the
// forgotten host still never reads it.
func TestAResultAfterTheForgetIsRefused(t *testing.T) {
	r := startRelay(t, nil)
	tab := openAnsweringTab(t, r.url, randomString()[:43])
	token, conn := connectHost(t, r, tab, map[string]any{"tool": "counter", "actions": []string{"get", "reset"}})
	host := callCounter(r.url, token, "reset")
	id := askingCall(t, tab)
	tab.request(t, map[string]any{"type": protocol.TypeForget, "connection": conn})
	tab.result(id)
	withdrawnAs(t, <-host, "ended this connection")
	if !strings.Contains(r.logs.String(), `"outcome":"withdrawn"`) {
		t.Fatalf("no call outcome line says the call was withdrawn:\n%s", r.logs.String())
	}
}
