package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// Version is the tab wire protocol version this relay speaks. A tab says
// which version it speaks in its hello; any other version is closed with
// CloseUnsupportedProtocol (SPEC §6).
const Version = 1

// MaxMessageBytes caps one message in either direction. Tool arguments and
// results travel inside messages, so the cap is sized for a result that
// holds a picture at the image limit plus its text (SPEC §10).
const MaxMessageBytes = 16 << 20

// Message types a tab sends (SPEC §6).
const (
	TypeHello              = "hello"
	TypeFocus              = "focus"
	TypeResult             = "result"
	TypeAsking             = "asking"
	TypeAnswered           = "answered"
	TypeStep               = "step"
	TypeProgress           = "progress"
	TypePermissions        = "permissions"
	TypeLog                = "log"
	TypePermissionsChanged = "permissions-changed"
	TypeApprove            = "approve"
	TypeDecline            = "decline"
	TypeListConnections    = "list-connections"
	TypeForget             = "forget"
	TypeSetScope           = "set-scope"
	TypeConnectInfo        = "connect-info" // a request, answered by a message of the same type
	TypePong               = "pong"
)

// Message types the relay sends (SPEC §6).
const (
	TypeWelcome          = "welcome"
	TypeCall             = "call"
	TypeCancel           = "cancel"
	TypeConnections      = "connections"
	TypeScope            = "scope"
	TypePing             = "ping"
	TypeDrain            = "drain"
	TypeDone             = "done"
	TypePermissionsQuery = "permissions-query"
	TypeError            = "error"
)

// FromTab is a message a tab sends: one of the types fromTab lists, or
// Unknown. Adding one takes:
//   - here, a Type constant, the struct, its fromTab method and its
//     fromTab entry (and a request method when the relay answers it by
//     its ref: a Request);
//   - its handler: tabsocket's, or, for what tabsocket does not handle
//     itself, the pairing actor's (on any node: actors/wire carries it as
//     the JSON it is);
//   - its heading in docs/tab-protocol.md;
//   - the SDK's code that sends it, typed by web/sdk/src/wire.ts, which
//     go generate ./protocol writes from this file.
type FromTab interface{ fromTab() }

// ToTab is a message the relay sends a tab: one of the types toTab lists.
type ToTab interface{ toTab() }

// Request is a message a tab sends that the relay answers by its ref:
// with its answer, or an Error (tabsocket/requests.go). The SDK's type of
// them is generated from the types that are one (WireRequestMessage).
type Request interface {
	FromTab
	request()
}

// fromTab is every message a tab sends, by type: DecodeFromTab reads data
// of the type into a value of the message's Go type.
var fromTab = map[string]FromTab{
	TypeHello:              Hello{},
	TypeFocus:              Focus{},
	TypeResult:             Result{},
	TypeAsking:             Asking{},
	TypeAnswered:           Asking{},
	TypeStep:               Step{},
	TypeProgress:           Progress{},
	TypePermissions:        Permissions{},
	TypeLog:                Log{},
	TypePermissionsChanged: PermissionsChanged{},
	TypeApprove:            Approve{},
	TypeDecline:            Approve{},
	TypeListConnections:    ListConnections{},
	TypeForget:             Forget{},
	TypeSetScope:           SetScope{},
	TypeConnectInfo:        ConnectInfoRequest{},
	TypePong:               Pong{},
}

// toTab is every message the relay sends, by type. TypeScope is reserved:
// this build never sends it (docs/tab-protocol.md §19).
var toTab = map[string]ToTab{
	TypeWelcome:          Welcome{},
	TypeCall:             Call{},
	TypeCancel:           Cancel{},
	TypeConnections:      Connections{},
	TypePing:             Ping{},
	TypeDrain:            Drain{},
	TypeDone:             Done{},
	TypePermissionsQuery: PermissionsQuery{},
	TypeError:            Error{},
	TypeConnectInfo:      ConnectInfo{},
}

// Envelope is the part every message shares: its type, and for a request
// the tab makes (approve, list-connections…) the ref the answer repeats.
type Envelope struct {
	Type string `json:"type"`
	Ref  string `json:"ref,omitempty"`
}

// Hello is the first message of every tab socket. It proves the tab with
// its browser's secret (never in the URL) within the hello deadline.
type Hello struct {
	Envelope
	Protocol int    `json:"protocol"` // the wire protocol version the tab speaks
	Secret   string `json:"secret"`   // the browser's tab secret: 32 bytes, base64url without padding
	TabID    string `json:"tabId"`    // the tab's own id for this page load, kept across reconnects
	Bundle   string `json:"bundle"`   // the bundle version the tab runs
	// FocusedAt is when the person last focused this tab (Unix ms, 0 when
	// never): the pairing actor rebuilds its focus order from it (SPEC §3).
	FocusedAt int64 `json:"focusedAt,omitempty"`
	// Reconnects counts this tab's earlier connections in this page load
	// (for the reconnects metric).
	Reconnects int `json:"reconnects,omitempty"`
}

func (Hello) fromTab() {}

// Focus says the person focused this tab at At (Unix ms).
type Focus struct {
	Envelope
	At int64 `json:"at"`
}

func (Focus) fromTab() {}

// Result answers a call. It may arrive on another socket than the one the
// call went out on: it is matched by call id. Result is a TabResult as the
// tab sent it, and Decoded the same read once, as the socket checked it
// (nil when nobody decoded it): a front end in the socket's process
// encodes Decoded for the host; the bytes are what crosses to another
// node's.
type Result struct {
	Envelope
	ID      string          `json:"id"`
	Result  json.RawMessage `json:"result" ts:"TabResult"`
	Decoded *TabResult      `json:"-"`
}

func (Result) fromTab() {}

func (m *Result) check() error {
	if m.ID == "" {
		return errNoID
	}
	var r TabResult
	if err := json.Unmarshal(m.Result, &r); err != nil {
		return fmt.Errorf("result: %w", err)
	}
	m.Decoded = &r
	return nil
}

// Asking says the tab is asking the person about call ID; of type
// TypeAnswered, that the person answered (the result follows).
type Asking struct {
	Envelope
	ID string `json:"id"`
}

func (Asking) fromTab()        {}
func (m *Asking) check() error { return needID(m.ID) }

// Progress reports how far the tab is with call ID: it reaches a host that
// asked for progress (MCP notifications/progress).
type Progress struct {
	Envelope
	ID       string  `json:"id"`
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

func (Progress) fromTab()        {}
func (m *Progress) check() error { return needID(m.ID) }

// Log is a log line of call ID for the host (MCP notifications/message):
// level is a syslog level name ("debug" … "emergency"), data any JSON.
type Log struct {
	Envelope
	ID    string          `json:"id"`
	Level string          `json:"level" ts:"LogLevel"`
	Data  json.RawMessage `json:"data"`
}

func (Log) fromTab() {}

func (m *Log) check() error {
	if !json.Valid(m.Data) {
		return errors.New("no data")
	}
	return needID(m.ID)
}

// PermissionsQuery asks the tab what the person's settings make of each
// tool for one connection, for the tool list a host is about to get.
type PermissionsQuery struct {
	Envelope
	ID         string     `json:"id"`
	Connection Connection `json:"connection"`
	Tools      []string   `json:"tools"`
}

func (PermissionsQuery) toTab() {}

// Permissions answers a PermissionsQuery: for each tool, PermissionAsks,
// PermissionRuns or PermissionRefused. Tools left out are unknown.
type Permissions struct {
	Envelope
	ID    string            `json:"id"`
	Tools map[string]string `json:"tools" ts:"Record<string, Permission>"`
}

func (Permissions) fromTab()        {}
func (m *Permissions) check() error { return needID(m.ID) }

// PermissionsChanged says the tools the tab allows changed (the person's
// settings): hosts should list them anew.
type PermissionsChanged struct{ Envelope }

func (PermissionsChanged) fromTab() {}

// What the person's settings make of a tool (SPEC §4).
const (
	PermissionAsks    = "asks"
	PermissionRuns    = "runs"
	PermissionRefused = "refused"
)

// Step says somebody changed something in the tab. By is "person" or the id
// of the connection whose call made the step; any step by another than the
// current turn's connection ends that turn (SPEC §1).
type Step struct {
	Envelope
	By string `json:"by"`
}

func (Step) fromTab() {}

func (m *Step) check() error {
	if m.By == "" {
		return errors.New("no by")
	}
	return nil
}

// StepByPerson is Step.By for the person's own steps.
const StepByPerson = "person"

// ScopeEntry grants one tool, and of it the named actions ("*", AllActions:
// all of them, including actions added later); scope.go holds the rule
// (SPEC §8).
type ScopeEntry struct {
	Tool    string   `json:"tool"`
	Actions []string `json:"actions" ts:"string[]?"` // a tab may leave it out: all actions
}

// Approve is the person's yes to a connect code, with the scope they chose;
// of type TypeDecline, their no (Scope empty).
type Approve struct {
	Envelope
	Code  string       `json:"code"`
	Scope []ScopeEntry `json:"scope,omitempty"`
	// Via is how the code reached the tab: "link" (ViaLink: the approval
	// link's fragment) or "typed" (ViaTyped: the person typed it; also
	// when left out). A link approval is released only once the approving
	// browser proved it opened the waiting page (the done's confirm).
	Via string `json:"via,omitempty"`
}

// How a connect code reached the tab (Approve.Via).
const (
	ViaLink  = "link"
	ViaTyped = "typed"
)

func (Approve) fromTab() {}
func (Approve) request() {}

// ConnectInfoRequest asks who waits behind a connect code (answered with
// ConnectInfo, by Ref), so that the person sees who asks before deciding.
type ConnectInfoRequest struct {
	Envelope
	Code string `json:"code"`
}

func (ConnectInfoRequest) fromTab() {}
func (ConnectInfoRequest) request() {}

// ConnectInfo answers a tab's connect-info (by Ref): who waits behind a
// connect code, so that the person sees who asks before approving.
type ConnectInfo struct {
	Envelope
	Client string `json:"client"` // the client's name, as it registered
	// ClientKind is "metadata-document" (ClientMetadataDocument) when the
	// client_id is an https URL whose metadata document the relay fetched
	// and checked (the name is what that site says), "registered"
	// (ClientRegistered) when the client registered itself (anyone can
	// pick any name).
	ClientKind string `json:"clientKind"`
	ClientURL  string `json:"clientUrl,omitempty"` // the metadata document's URL ("metadata-document" only)
	// RedirectHost is where the authorization says it goes back to, in
	// ASCII (an internationalized name in punycode): not a proof of who
	// gets the connection, which is whoever holds the waiting page.
	RedirectHost string `json:"redirectHost"`
	// RedirectHostMixedScript is set when a label of the redirect host
	// mixes letters of several scripts, as look-alike names do.
	RedirectHostMixedScript bool `json:"redirectHostMixedScript,omitempty"`
	// RequestedScope is what the host asked for in the relay's words
	// (only entries of the catalogue); null when it asked for nothing.
	RequestedScope []ScopeEntry `json:"requestedScope"`
	ExpiresAt      int64        `json:"expiresAt"` // when the code expires, Unix ms
	// StartedAt is when the request started (the waiting page's request),
	// Unix ms.
	StartedAt int64 `json:"startedAt"`
	// Device is the browser family and system its User-Agent names ("" when
	// none the relay knows; a User-Agent can lie).
	Device      string `json:"device,omitempty"`
	SameAddress bool   `json:"sameAddress"` // it came from this tab's network address
	// CrossDevice is false when the relay's operator turned typed codes
	// off (RELAY_CONNECT_CROSS_DEVICE=false): only a link approval in the
	// browser that opened the waiting page connects.
	CrossDevice bool `json:"crossDevice"`
	// State is "pending" for a code the person may still decide; for
	// a request this browser decided, where it stands: "confirming" (a
	// link approval waits for the relay window's proof), "approved",
	// "declined" (reason "other-browser": the proof failed) or "expired".
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	// Connection is the connection made, with state "approved" (a link
	// approval's outcome): the panel offers to undo it.
	Connection *ConnectionInfo `json:"connection,omitempty"`
}

func (ConnectInfo) toTab() {}

// The kinds of client a connect-info names.
const (
	ClientMetadataDocument = "metadata-document"
	ClientRegistered       = "registered"
)

// Forget ends one connection of this browser: its tokens stop working.
type Forget struct {
	Envelope
	Connection string `json:"connection"`
}

func (Forget) fromTab() {}
func (Forget) request() {}

// SetScope replaces one connection's scope with the person's choice.
type SetScope struct {
	Envelope
	Connection string       `json:"connection"`
	Scope      []ScopeEntry `json:"scope"`
}

func (SetScope) fromTab() {}
func (SetScope) request() {}

// ListConnections asks for the browser's connections (answered with
// Connections, by Ref).
type ListConnections struct{ Envelope }

func (ListConnections) fromTab() {}
func (ListConnections) request() {}

// ConnectionInfo is one connection of the browser as its tab shows it in
// the app's Connections panel.
type ConnectionInfo struct {
	ID         string       `json:"id"`
	Client     string       `json:"client"`
	Host       string       `json:"host"`
	CreatedAt  int64        `json:"createdAt"`  // Unix ms
	LastUsedAt int64        `json:"lastUsedAt"` // Unix ms
	Scope      []ScopeEntry `json:"scope"`
	// ParentID names the connection a derived one (a host's sub-agent,
	// by token exchange) was minted from; none for one a person approved.
	ParentID string `json:"parentId,omitempty"`
}

// Connections answers list-connections (by Ref).
type Connections struct {
	Envelope
	Connections []ConnectionInfo `json:"connections"`
}

func (Connections) toTab() {}

// Done answers approve, decline, forget and set-scope (by Ref) that
// succeeded; Connection is the connection they made or changed.
type Done struct {
	Envelope
	Connection *ConnectionInfo `json:"connection,omitempty"`
	// Confirm answers a link approval: the relay's page the approving
	// browser opens as a top-level window to prove it holds the waiting
	// page's cookie; the connection exists only once it did. Its
	// fragment holds a single-use handle, never sent in a request line.
	Confirm string `json:"confirm,omitempty"`
}

func (Done) toTab() {}

// Welcome answers a good hello.
type Welcome struct {
	Envelope
	Protocol       int    `json:"protocol"`
	Pairing        string `json:"pairing"`        // the pairing's id (derived from the secret's hash; not a secret)
	PingIntervalMs int64  `json:"pingIntervalMs"` // the relay pings this often; answer each with pong
	MaxMessage     int    `json:"maxMessageBytes"`
}

func (Welcome) toTab() {}

// Connection is who a call comes from: one approved grant of one host.
type Connection struct {
	ID     string `json:"id"`
	Kind   string `json:"kind" ts:"ConnectionKind"` // "connector": an agent host through the relay
	Client string `json:"client"`                   // the OAuth client's name
	Host   string `json:"host"`                     // the client's redirect host
}

// Call asks the tab to run one tool. The same ID may arrive again after a
// reconnect (Redelivery > 0): the tab must run each id at most once and
// answer a repeated id with the result it already has.
type Call struct {
	Envelope
	ID         string          `json:"id"`
	Tool       string          `json:"tool"`
	Arguments  json.RawMessage `json:"arguments,omitempty"`
	Connection Connection      `json:"connection"`
	Turn       string          `json:"turn"`
	DeadlineMs int64           `json:"deadline"` // Unix ms after which the relay stops waiting
	Redelivery int             `json:"redelivery,omitempty"`
}

func (Call) toTab() {}

// Cancel tells the tab the relay no longer waits for call ID.
type Cancel struct {
	Envelope
	ID     string `json:"id"`
	Reason string `json:"reason" ts:"CancelReason"` // "cancelled" (the host went away), "timeout" or "answered" (on another socket)
}

func (Cancel) toTab() {}

// Ping asks for a pong; a tab silent for two intervals is disconnected.
type Ping struct {
	Envelope
	At int64 `json:"at"`
}

func (Ping) toTab() {}

// Pong answers a ping.
type Pong struct{ Envelope }

func (Pong) fromTab() {}

// Drain tells the tab this relay node is going away: reconnect after
// ReconnectAfterMs (spread over a window so a node's tabs do not all
// arrive at once).
type Drain struct {
	Envelope
	ReconnectAfterMs int64 `json:"reconnectAfterMs"`
}

func (Drain) toTab() {}

// Error answers a tab's request (by Ref) that could not be done: the
// RelayError's code and sentence (errors.go).
type Error struct {
	Envelope
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (Error) toTab() {}

// DecodeType reads only the type (and ref) of a message: the rest is
// checked by the decode of its type (DecodeFromTab, DecodeToTab).
func DecodeType(data []byte) (Envelope, error) {
	if t, ok := leadingType(data); ok {
		return Envelope{Type: t}, nil
	}
	var env Envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return env, fmt.Errorf("message is not a JSON object: %w", err)
	}
	if env.Type == "" {
		return env, fmt.Errorf("message has no type")
	}
	return env, nil
}

// typePrefix is how both tab clients begin every message (the SDK's
// JSON.stringify of an object literal, encoding/json of a struct whose
// first field is the Envelope).
var typePrefix = []byte(`{"type":"`)

// leadingType reads the type of a message that begins with it, as both
// clients write every message, without a JSON decode of the whole message
// (a quarter of a result's read, issue 27): a plain string, followed by
// another member or the end. It reads what the decoder would, or leaves
// the message to it: nothing escaped anywhere, and no other member the
// decoder would take for the type or the ref (it matches names without
// regard to case).
func leadingType(data []byte) (string, bool) {
	if !bytes.HasPrefix(data, typePrefix) || bytes.IndexByte(data, '\\') >= 0 {
		return "", false
	}
	rest := data[len(typePrefix):]
	end := bytes.IndexByte(rest, '"')
	if end <= 0 || end+1 >= len(rest) || (rest[end+1] != ',' && rest[end+1] != '}') {
		return "", false
	}
	for _, c := range rest[:end] {
		if c < 0x20 || c >= 0x80 {
			return "", false
		}
	}
	for i := end + 1; i < len(rest); i++ {
		if rest[i] == '"' && (quoted(rest[i+1:], "type") || quoted(rest[i+1:], "ref")) {
			return "", false
		}
	}
	return string(rest[:end]), true
}

// quoted says whether b begins with name, in any case, and a quote.
func quoted(b []byte, name string) bool {
	return len(b) > len(name) && b[len(name)] == '"' && bytes.EqualFold(b[:len(name)], []byte(name))
}

// Typed returns an Envelope of type t, for building messages:
// protocol.Call{Envelope: protocol.Typed(protocol.TypeCall), …}.
func Typed(t string) Envelope { return Envelope{Type: t} }

// Unknown is a message of a type this relay does not know (a newer
// protocol's): the relay answers it with ErrCodeUnsupported and goes on.
type Unknown struct{ Envelope }

func (Unknown) fromTab() {}

// DecodeFromTab reads data, a message a tab sent whose envelope DecodeType
// read as env, into its type's message; an Unknown when this relay does
// not know the type. An error says that data is not a message of its type
// (a field of the wrong JSON type, a required field missing): the relay
// closes such a tab with CloseBadMessage.
func DecodeFromTab(env Envelope, data []byte) (FromTab, error) {
	m, ok := fromTab[env.Type]
	if !ok {
		return Unknown{Envelope: env}, nil
	}
	return decodeAs[FromTab](m, data)
}

// DecodeToTab reads data, a message the relay sent whose envelope
// DecodeType read as env. A type this relay does not send is an error.
func DecodeToTab(env Envelope, data []byte) (ToTab, error) {
	m, ok := toTab[env.Type]
	if !ok {
		return nil, fmt.Errorf("the relay sends no %q message", env.Type)
	}
	return decodeAs[ToTab](m, data)
}

// decodeAs reads data into a new value of like's type, and checks it when
// that type says what it needs (a check method).
func decodeAs[U any](like U, data []byte) (U, error) {
	var none U
	p := reflect.New(reflect.TypeOf(like))
	if err := json.Unmarshal(data, p.Interface()); err != nil {
		return none, err
	}
	if c, ok := p.Interface().(interface{ check() error }); ok {
		if err := c.check(); err != nil {
			return none, fmt.Errorf("%s message: %w", reflect.TypeOf(like).Name(), err)
		}
	}
	return p.Elem().Interface().(U), nil
}

var errNoID = errors.New("no id")

func needID(id string) error {
	if id == "" {
		return errNoID
	}
	return nil
}
