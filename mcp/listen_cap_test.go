package mcp

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/protocol"
)

// openListen posts subscriptions/listen to url as token and returns the
// response once its first line arrived (the stream is open), or the whole
// answer when it is not a stream.
func openListen(t *testing.T, url, token string) *http.Response {
	t.Helper()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	body := `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + meta + `}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Protocol-Version", ModernVersion)
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestListenStreamsPerConnectionAreBounded (issue 15 item 13): 150 listen
// streams of one token were all held; now one connection holds at most
// MaxStreamsPerConnection on a node, the next is refused with 429 and a
// JSON-RPC error that says so, and a stream closed makes room.
func TestListenStreamsPerConnectionAreBounded(t *testing.T) {
	ts := streamServer(t, tickCaller{period: time.Millisecond}, time.Hour)
	var open []*http.Response
	for i := range MaxStreamsPerConnection {
		resp := openListen(t, ts.URL+"/", "tra_x")
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("stream %d: %d %s", i+1, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
			t.Fatalf("stream %d: %v", i+1, err)
		}
		open = append(open, resp)
	}
	over := openListen(t, ts.URL+"/", "tra_x")
	var rep rpcReply
	if err := json.NewDecoder(over.Body).Decode(&rep); err != nil {
		t.Fatalf("over the cap: %d, not JSON: %v", over.StatusCode, err)
	}
	if over.StatusCode != http.StatusTooManyRequests || rep.Error.Code != protocol.ErrLimited.RPC || !strings.Contains(rep.Error.Message, "8 open subscriptions/listen streams") {
		t.Fatalf("over the cap: %d %+v", over.StatusCode, rep.Error)
	}
	open[0].Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp := openListen(t, ts.URL+"/", "tra_x")
		if resp.StatusCode == http.StatusOK {
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("a closed stream did not make room")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
