package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/tabrelay/tabrelay/events"
	"github.com/tabrelay/tabrelay/internal/httpx"
	"github.com/tabrelay/tabrelay/protocol"
)

// DefaultJSONWait is Config.JSONWait's default: an instant tab answers
// well within it, a person asked or a long tool opens the stream.
const DefaultJSONWait = 30 * time.Millisecond

// DefaultKeepAlive is Config.KeepAlive's default: well under the 60 s
// that the official TypeScript SDK's requests wait by default, so that a
// host resetting its timeout on progress hears some three times in it.
const DefaultKeepAlive = 15 * time.Second

// Verifier checks bearer tokens (the authorization server's Verify): the
// grant carries the connection's resolved scope. A token that does not
// open this resource is refused with protocol.ErrInvalidToken (the host
// gets 401); any other error is the store's (503).
type Verifier interface {
	Verify(ctx context.Context, token string) (protocol.Grant, error)
}

// Caller runs a tool call on the browser's tab and returns how it ended
// (the front end encodes it for the host). events hears what happens
// meanwhile; it must not block.
type Caller interface {
	Call(ctx context.Context, call protocol.CallRequest, events func(protocol.CallEvent)) protocol.Outcome
	// Permissions asks the browser's tab what the person's settings make
	// of each tool for this connection ("asks", "runs", "refused"); ok is
	// false when no tab answered in time.
	Permissions(ctx context.Context, pairing string, conn protocol.Connection, tools []string) (map[string]string, bool)
}

// Config is what the MCP front end needs.
type Config struct {
	PublicURL           string // the relay's origin: the resource
	ResourceMetadataURL string // where 401s point hosts
	Version             string
	Bundle              *protocol.Bundle
	Verifier            Verifier
	Caller              Caller
	// Events is the node's: the listen streams and the calls in flight
	// hear their browser's; a host's cancel of a call that does not run
	// here goes to the other nodes (events.CallCancelled), whose
	// CancelLocal ends it.
	Events  *events.Hub
	Metrics *Metrics
	// AllowedOrigins may send requests from a browser (the public origin
	// always may); any other Origin is refused (DNS rebinding, SPEC §4).
	AllowedOrigins []string
	MaxBody        int64 // request body limit; default defaultMaxBody
	// KeepAlive is how often an event stream that has nothing to say
	// says something: a comment, or on a tools/call whose host sent a
	// progress token a progress notification of what the call waits
	// for (a host that resets its request timeout on progress keeps
	// waiting; issue 25); default DefaultKeepAlive.
	KeepAlive time.Duration
	// JSONWait is how long a tools/call of a host that accepts both waits
	// for its result before it opens the event stream (a progress, a
	// question to the person or a log opens it sooner); default
	// DefaultJSONWait, below zero the stream opens at once.
	JSONWait time.Duration
	Logger   *slog.Logger
}

// defaultMaxBody is the request body limit unless Config says otherwise.
const defaultMaxBody = 4 << 20

// retryAfter is the Retry-After of every 503 (docs/cluster.md): time for
// the node's next store check and a reconnect.
const retryAfter = "5"

// Server serves POST /.
type Server struct {
	cfg        Config
	origins    map[string]bool
	hosts      map[string]bool
	publicHost string // as RELAY_PUBLIC_URL names it, for the refusal
	calls      calls  // the tools/calls running here, for cancellation
	streams    streamCounts
	info       map[string]any // serverInfo, read only
}

// NewServer checks cfg and returns the front end.
func NewServer(cfg Config) (*Server, error) {
	if cfg.PublicURL == "" || cfg.Bundle == nil || cfg.Caller == nil || cfg.Verifier == nil {
		return nil, errors.New("mcp: public URL, bundle, caller, guard and verifier are required")
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = defaultMaxBody
	}
	if cfg.Version == "" {
		cfg.Version = "dev" // serverInfo needs a version
	}
	if cfg.JSONWait == 0 {
		cfg.JSONWait = DefaultJSONWait
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = DefaultKeepAlive
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Events == nil {
		cfg.Events = events.New(nil)
	}
	pub, err := url.Parse(cfg.PublicURL)
	if err != nil || pub.Host == "" {
		return nil, errors.New("mcp: the public URL must be an origin")
	}
	s := &Server{cfg: cfg, origins: map[string]bool{strings.ToLower(pub.Scheme + "://" + pub.Host): true},
		hosts: map[string]bool{strings.ToLower(pub.Host): true}, publicHost: pub.Host,
		info: map[string]any{"name": "tabrelay", "title": cfg.Bundle.App.Title + " (tabrelay)", "version": cfg.Version}}
	for _, o := range cfg.AllowedOrigins {
		s.origins[strings.ToLower(strings.TrimSuffix(o, "/"))] = true
	}
	if h := pub.Hostname(); h == "localhost" || net.ParseIP(h) != nil && net.ParseIP(h).IsLoopback() {
		// A relay on loopback is reached as localhost or 127.0.0.1 alike.
		for _, alias := range []string{"localhost", "127.0.0.1", "[::1]"} {
			s.hosts[alias+portSuffix(pub)] = true
		}
	}
	return s, nil
}

func portSuffix(u *url.URL) string {
	if p := u.Port(); p != "" {
		return ":" + p
	}
	return ""
}

// ServeHTTP answers one MCP request (SPEC §4).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "The MCP endpoint takes POST only.", http.StatusMethodNotAllowed)
		return
	}
	if !s.hosts[strings.ToLower(r.Host)] {
		// DNS rebinding guard: only the public host (a proxy in front must
		// pass it on) reaches MCP.
		http.Error(w, fmt.Sprintf("This relay serves MCP at the Host %s (its RELAY_PUBLIC_URL), not %q.",
			s.publicHost, r.Host), http.StatusForbidden)
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !s.origins[strings.ToLower(o)] {
		http.Error(w, "This Origin may not call the relay.", http.StatusForbidden)
		return
	}
	grant, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	body, rerr := s.readBody(w, r)
	if rerr != nil {
		writeError(w, nil, rerr)
		return
	}
	if bytes.HasPrefix(bytes.TrimSpace(body), []byte("[")) {
		writeError(w, nil, protocol.ErrBadRequest.With("One JSON-RPC message per request: batches are not served."))
		return
	}
	// Unmarshal checks the whole body is JSON before it decodes any of it
	// (a syntax error: a parse error). Valid JSON that is wrong makes an
	// invalid request, not a parse error (JSON-RPC 2.0 §5.1), and its id
	// is echoed only when it is one JSON-RPC allows (else null).
	var req request
	err := json.Unmarshal(body, &req)
	if _, syntax := err.(*json.SyntaxError); syntax {
		writeError(w, nil, protocol.ErrParse)
		return
	}
	if err != nil || req.JSONRPC != "2.0" || (req.Method == "" && !req.isResponse()) || (len(req.ID) > 0 && !validID(req.ID)) {
		var id json.RawMessage
		if validID(req.ID) {
			id = req.ID
		}
		writeError(w, id, protocol.ErrBadRequest.With("Not a JSON-RPC 2.0 request."))
		return
	}
	if req.isNotification() || req.isResponse() {
		if req.Method == "notifications/cancelled" {
			s.cancelled(grant, req.Params)
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	s.handle(w, r, &req, grant)
}

// readBody reads the request body within the limit. What went wrong is
// said as it is: a body over the limit is 413, one that stopped arriving
// before the server's read deadline is 408, one cut off is 400.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *protocol.RelayError) {
	body, err := readAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody), min(r.ContentLength, maxPresized))
	if err == nil {
		return body, nil
	}
	var tooBig *http.MaxBytesError
	var netErr net.Error
	switch {
	case errors.As(err, &tooBig):
		return nil, protocol.ErrTooLarge.Withf("The request body is larger than the relay's limit of %d bytes.", s.cfg.MaxBody)
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout():
		return nil, protocol.ErrBodyTimeout
	}
	return nil, protocol.ErrBadRequest.With("The request body did not arrive whole.")
}

// maxPresized bounds the buffer readBody makes before the body arrives: a
// larger body grows it as its bytes come, so that a request claiming a
// large Content-Length costs nothing until it sends it.
const maxPresized = 64 << 10

// readAll is io.ReadAll into a buffer of the size the request says
// (Content-Length; -1: unknown), and one byte more to see its end without
// growing: io.ReadAll began with 512 bytes, most of them unused by a
// tools/call's body, for every request (issue 27).
func readAll(r io.Reader, size int64) ([]byte, error) {
	b := make([]byte, 0, max(size, 0)+1)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // more than it said, or it said nothing: grow
		}
	}
}

// authenticate checks the bearer token (SPEC §5). A missing or bad token
// is answered 401 with where to find the authorization server.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (protocol.Grant, bool) {
	token, found := httpx.Bearer(r)
	if found {
		g, err := s.cfg.Verifier.Verify(r.Context(), token)
		if err == nil {
			return g, true
		}
		if !errors.Is(err, protocol.ErrInvalidToken) {
			s.cfg.Logger.Error("token check failed", "err", err)
			WriteUnavailable(w, r, "The relay cannot check tokens right now; retry in a few seconds.")
			return protocol.Grant{}, false
		}
	}
	challenge := `Bearer resource_metadata="` + s.cfg.ResourceMetadataURL + `"`
	if found {
		challenge += `, error="invalid_token"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	httpx.WriteOAuthError(w, protocol.ErrUnauthorized)
	return protocol.Grant{}, false
}

// WriteUnavailable answers an MCP request that cannot be served now (its
// token or the store cannot be read): 503 with Retry-After, and message as
// a JSON-RPC error carrying the request's id, read from the body when
// nothing has read it yet. Every 503 of the MCP route has this shape, from
// the first request of an outage on (issue 17).
func WriteUnavailable(w http.ResponseWriter, r *http.Request, message string) {
	w.Header().Set("Retry-After", retryAfter)
	writeError(w, requestID(w, r), protocol.ErrUnavailable.With(message))
}

// requestID reads the id of the one JSON-RPC request in r's body, within
// the default body limit; nil when there is none.
func requestID(w http.ResponseWriter, r *http.Request) json.RawMessage {
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	if json.NewDecoder(http.MaxBytesReader(w, r.Body, defaultMaxBody)).Decode(&req) != nil || !validID(req.ID) {
		return nil
	}
	return req.ID
}

// writeError answers a request with a JSON-RPC error at its HTTP status.
func writeError(w http.ResponseWriter, id json.RawMessage, e *protocol.RelayError) {
	if id == nil {
		id = json.RawMessage("null")
	}
	httpx.WriteJSON(w, e.Status, response{JSONRPC: "2.0", ID: id, Error: &wireError{Code: e.RPC, Message: e.Message, Data: e.Data}})
}

func writeResult(w http.ResponseWriter, id json.RawMessage, result any) {
	httpx.WriteJSON(w, http.StatusOK, response{JSONRPC: "2.0", ID: id, Result: result})
}
