package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/protocol"
)

// tickCaller ends every call after one keep-alive period, so that calls
// end on the stream's ticks; late, when set, hears each call's events
// callback once the call returned.
type tickCaller struct {
	period time.Duration
	late   chan func(protocol.CallEvent)
}

func (c tickCaller) Call(_ context.Context, _ protocol.CallRequest, events func(protocol.CallEvent)) protocol.Outcome {
	time.Sleep(c.period)
	events(protocol.CallEvent{Kind: protocol.CallProgress, Progress: 1, Message: "half way"})
	if c.late != nil {
		c.late <- events
	}
	return protocol.Outcome{Kind: protocol.Answered, Result: protocol.TabResult{Data: json.RawMessage(`"done"`)}}
}

func (tickCaller) Permissions(context.Context, string, protocol.Connection, []string) (map[string]string, bool) {
	return nil, false
}

// streamServer serves the front end over real HTTP, accepting every
// token, with keepAlive.
func streamServer(t *testing.T, c Caller, keepAlive time.Duration) *httptest.Server {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	srv, err := NewServer(Config{PublicURL: "http://" + ts.Listener.Addr().String(), Bundle: protocol.ProbeBundle(),
		Caller: c, Verifier: acceptAll{}, KeepAlive: keepAlive})
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = srv
	ts.Start()
	t.Cleanup(ts.Close)
	return ts
}

// streamedCall posts one tools/call that asks for an event stream and
// reads the stream to its end.
func streamedCall(client *http.Client, url string, id int) (string, error) {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"counter","arguments":{"action":"get"},"_meta":{"progressToken":"t%d"}}}`, id, id)
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer tra_x")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if want := fmt.Sprintf(`"id":%d,"result"`, id); !strings.Contains(string(raw), want) {
		return "", fmt.Errorf("call %d: no result in %q", id, raw)
	}
	return string(raw), nil
}

// TestStreamedCallsEndingOnKeepAliveTicks is issue 17's crash: a
// keep-alive that took its tick while the call's result was being
// written wrote to the response after the handler had returned (a data
// race under -race; a nil pointer in bufio.(*Writer).Flush without). Calls
// here last one keep-alive period each, over reused connections, so that
// many end on a tick.
func TestStreamedCallsEndingOnKeepAliveTicks(t *testing.T) {
	const period = 200 * time.Microsecond
	ts := streamServer(t, tickCaller{period: period}, period)
	workers, calls := 8, 150
	if testing.Short() {
		calls = 30
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer client.CloseIdleConnections()
			for i := range calls {
				if _, err := streamedCall(client, ts.URL, w*calls+i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestStreamDropsEventsAfterTheCallEnded: a call's events callback may be
// called after the call returned (the caller's goroutines outlive it); what
// it sends then goes nowhere, and the next request on the same connection
// is answered whole.
func TestStreamDropsEventsAfterTheCallEnded(t *testing.T) {
	late := make(chan func(protocol.CallEvent), 1)
	ts := streamServer(t, tickCaller{period: time.Millisecond, late: late}, time.Hour)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	first, err := streamedCall(client, ts.URL, 1)
	if err != nil {
		t.Fatal(err)
	}
	events := <-late
	// The first response was read to its end: its handler has returned.
	events(protocol.CallEvent{Kind: protocol.CallProgress, Progress: 2, Message: "too late"})
	second := make(chan string, 1)
	go func() {
		s, err := streamedCall(client, ts.URL, 2)
		if err != nil {
			t.Error(err)
		}
		second <- s
	}()
	events(protocol.CallEvent{Kind: protocol.CallProgress, Progress: 3, Message: "too late"})
	<-late // the second call's callback: its result is under way
	s := <-second
	for _, body := range []string{first, s} {
		if strings.Contains(body, "too late") {
			t.Fatalf("an event sent after its call ended reached a response:\n%s", body)
		}
	}
}
