package headless

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/tabrelay/tabrelay/protocol"
)

// testOrigin is the origin the fake relay allows.
const testOrigin = "https://app.example"

// waitLong bounds every wait of the tests; nothing should come near it.
const waitLong = 30 * time.Second

// fakeRelay plays the relay's /tab endpoint: it reads the hello, answers
// with a welcome, and hands each socket to the test.
type fakeRelay struct {
	srv     *httptest.Server
	sockets chan *tabSocket
}

// tabSocket is the relay's side of one tab socket.
type tabSocket struct {
	t       *testing.T
	ws      *websocket.Conn
	hello   protocol.Hello
	origin  string
	msgs    chan []byte // messages after the hello; closed when the socket ends
	skipped []protocol.Envelope
}

// message is one message of the tab, decoded loosely.
type message struct {
	Type     string             `json:"type"`
	ID       string             `json:"id"`
	By       string             `json:"by"`
	At       int64              `json:"at"`
	Result   protocol.TabResult `json:"result"`
	Progress *float64           `json:"progress"`
	Total    float64            `json:"total"`
	Message  string             `json:"message"`
	Level    string             `json:"level"`
	Data     json.RawMessage    `json:"data"`
}

func newFakeRelay(t *testing.T) *fakeRelay {
	r := &fakeRelay{sockets: make(chan *tabSocket, 16)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/tab" {
			http.NotFound(w, req)
			return
		}
		r.serve(t, w, req)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *fakeRelay) serve(t *testing.T, w http.ResponseWriter, req *http.Request) {
	if req.Header.Get("Origin") != testOrigin {
		http.Error(w, "origin", http.StatusForbidden)
		return
	}
	ws, err := websocket.Accept(w, req, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return
	}
	defer ws.CloseNow()
	ws.SetReadLimit(protocol.MaxMessageBytes)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	_, data, err := ws.Read(ctx)
	cancel()
	s := &tabSocket{t: t, ws: ws, origin: req.Header.Get("Origin"), msgs: make(chan []byte, 1000)}
	if err != nil || json.Unmarshal(data, &s.hello) != nil {
		return
	}
	s.send(protocol.Welcome{Envelope: protocol.Typed(protocol.TypeWelcome), Protocol: protocol.Version,
		Pairing: "ptest", PingIntervalMs: 60_000, MaxMessage: protocol.MaxMessageBytes})
	r.sockets <- s
	defer close(s.msgs)
	for {
		_, data, err := ws.Read(context.Background())
		if err != nil {
			return
		}
		s.msgs <- data
	}
}

// accept returns the next tab socket.
func (r *fakeRelay) accept(t *testing.T) *tabSocket {
	t.Helper()
	select {
	case s := <-r.sockets:
		return s
	case <-time.After(waitLong):
		t.Fatal("no tab connected")
		return nil
	}
}

// noSocket checks that no tab connects within d.
func (r *fakeRelay) noSocket(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-r.sockets:
		t.Fatal("a tab connected, want none")
	case <-time.After(d):
	}
}

func (s *tabSocket) send(msg any) {
	data, err := json.Marshal(msg)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	_ = s.ws.Write(ctx, websocket.MessageText, data) // a closed socket shows in what the test reads next
}

// call sends a call of connection conn-1.
func (s *tabSocket) call(id, tool, args string) {
	c := protocol.Call{Envelope: protocol.Typed(protocol.TypeCall), ID: id, Tool: tool,
		Connection: protocol.Connection{ID: "conn-1", Kind: "connector", Client: "test"}, Turn: "turn-1"}
	if args != "" {
		c.Arguments = json.RawMessage(args)
	}
	s.send(c)
}

func (s *tabSocket) cancel(id string) {
	s.send(protocol.Cancel{Envelope: protocol.Typed(protocol.TypeCancel), ID: id, Reason: "cancelled"})
}

func (s *tabSocket) close(code protocol.CloseCode) {
	_ = s.ws.Close(websocket.StatusCode(code), code.Reason())
}

// nextWithin returns the tab's next message, or false when none came in d.
func (s *tabSocket) nextWithin(d time.Duration) (message, bool) {
	s.t.Helper()
	select {
	case data, ok := <-s.msgs:
		if !ok {
			s.t.Fatal("the tab socket ended")
		}
		var m message
		if err := json.Unmarshal(data, &m); err != nil {
			s.t.Fatalf("tab sent %s: %v", data, err)
		}
		return m, true
	case <-time.After(d):
		return message{}, false
	}
}

// quiet checks that the tab has nothing more to say: it pings and wants
// the pong before anything else (the tab's writes are ordered, so what it
// had queued comes first). No time window decides.
func (s *tabSocket) quiet() {
	s.t.Helper()
	s.send(protocol.Ping{Envelope: protocol.Typed(protocol.TypePing)})
	for {
		m, ok := s.nextWithin(waitLong)
		switch {
		case !ok:
			s.t.Fatal("no pong")
		case m.Type == protocol.TypePong:
			return
		case m.Type != protocol.TypeFocus:
			s.t.Fatalf("the tab sent %+v, want nothing more", m)
		}
	}
}

// next returns the tab's next message other than pong and focus.
func (s *tabSocket) next() message {
	s.t.Helper()
	for {
		m, ok := s.nextWithin(waitLong)
		if !ok {
			s.t.Fatal("the tab sent nothing")
		}
		if m.Type != protocol.TypePong && m.Type != protocol.TypeFocus {
			return m
		}
	}
}

// result returns the result of call id; the messages before it are kept
// in s.skipped.
func (s *tabSocket) result(id string) protocol.TabResult {
	s.t.Helper()
	s.skipped = nil
	for {
		m := s.next()
		if m.Type == protocol.TypeResult {
			if m.ID != id {
				s.t.Fatalf("result of %s, want one of %s", m.ID, id)
			}
			return m.Result
		}
		s.skipped = append(s.skipped, protocol.Envelope{Type: m.Type, Ref: m.ID + m.By})
	}
}

// running is a Tab whose Run runs until the test ends.
type running struct {
	*Tab
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// testOptions are the options of a test tab: a fresh secret file, short
// backoffs, no logs.
func testOptions(t *testing.T, relay *fakeRelay) Options {
	return Options{Relay: relay.srv.URL, Origin: testOrigin, SecretFile: filepath.Join(t.TempDir(), "secret"),
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func start(t *testing.T, opts Options, setup ...func(*Tab)) *running {
	t.Helper()
	tab, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range setup {
		f(tab)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Tab: tab, cancel: cancel, done: make(chan struct{})}
	go func() {
		r.err = tab.Run(ctx)
		close(r.done)
	}()
	t.Cleanup(func() {
		cancel()
		r.wait(t)
	})
	return r
}

// wait returns Run's error once Run returned.
func (r *running) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-r.done:
		return r.err
	case <-time.After(waitLong):
		t.Fatal("Run did not return")
		return nil
	}
}
