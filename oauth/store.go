package oauth

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/tabrelay/tabrelay/internal/limit"
	"github.com/tabrelay/tabrelay/protocol"
)

// ErrNotFound is what a Store answers for a record it does not hold (or no
// longer holds: expired records may be gone).
var ErrNotFound = errors.New("not found")

// Store keeps the authorization server's records. Every method is atomic on
// its own; the Update methods run fn on the stored record inside one
// transaction (or an optimistic retry loop) and store what fn left, so
// that two nodes cannot both rotate one refresh token or use one code. fn
// may run more than once and must not have side effects; an error from fn
// aborts the update and is returned as is.
type Store interface {
	// PutClient stores a client until its End; TouchClient records now
	// as its last use (its tokens renew it), writing at most hourly, and
	// answers ErrNotFound for a client it does not hold.
	PutClient(ctx context.Context, c Client) error
	Client(ctx context.Context, id string) (Client, error)
	TouchClient(ctx context.Context, id string, now time.Time) error

	// PutConnectRequest stores a new request, findable by its id and by the
	// hash of its connect code.
	PutConnectRequest(ctx context.Context, r ConnectRequest) error
	ConnectRequest(ctx context.Context, id string) (ConnectRequest, error)
	ConnectRequestByCode(ctx context.Context, codeHash []byte) (ConnectRequest, error)
	// ConnectRequestByAuthCode finds the request an authorization code was
	// issued for (codes live on their request, indexed by their hash).
	ConnectRequestByAuthCode(ctx context.Context, authCodeHash []byte) (ConnectRequest, error)
	UpdateConnectRequest(ctx context.Context, id string, fn func(*ConnectRequest) error) (ConnectRequest, error)

	PutConnection(ctx context.Context, c Connection) error
	Connection(ctx context.Context, id string) (Connection, error)
	UpdateConnection(ctx context.Context, id string, fn func(*Connection) error) (Connection, error)
	ConnectionsOfPairing(ctx context.Context, pairing string) ([]Connection, error)
	// PutDerivedConnection stores c, a connection derived (token
	// exchange) from c.ParentID in the tree of c.RootID, with its own
	// scope record when scope is not nil, if the live derived connections
	// it joins stay within lim at now: its parent's children, its root's
	// tree, its pairing's. The count and the write are one transaction,
	// for every node. Over a limit nothing is stored and the answer is a
	// *DerivedFull. The counts come from indexes kept with the records
	// (never a scan of the pairing): a derived connection leaves them at
	// its end, or when UpdateConnection revokes it.
	PutDerivedConnection(ctx context.Context, c Connection, scope *Scope, lim DerivedLimits, now time.Time) error
	// DerivedChildren lists the ids of the live connections derived
	// from parent (in its index), sorted.
	DerivedChildren(ctx context.Context, parent string, now time.Time) ([]string, error)

	// PutFamily stores a new refresh-token family, findable by its id and
	// by every refresh hash it holds.
	PutFamily(ctx context.Context, f Family) error
	Family(ctx context.Context, id string) (Family, error)
	FamilyByRefresh(ctx context.Context, refreshHash []byte) (Family, error)
	// UpdateFamily keeps the refresh-hash index in step with what fn did
	// to the family's hashes.
	UpdateFamily(ctx context.Context, id string, fn func(*Family) error) (Family, error)
	FamiliesOfConnection(ctx context.Context, connection string) ([]Family, error)

	// ScopeRecord returns a connection's own scope record as stored (it may
	// not parse: the guard then grants nothing); PutScope writes one and
	// keeps the reverse index of its entries' tool and action words in
	// step in the same transaction; ScopeHolders answers from that index,
	// sorted, which connections' records have an entry for tool with one
	// of actions (none given: any entry for tool). Which words grant a
	// call is the scope rule's (protocol.ActionsGranting), not the store's.
	ScopeRecord(ctx context.Context, connection string) ([]byte, error)
	PutScope(ctx context.Context, connection string, s Scope) error
	// UpdateScope writes the record fn makes of the one stored (nil: none)
	// in one transaction with that read, index included: two writers that
	// each add to a record both land (a conflict reruns fn). An error from
	// fn writes nothing.
	UpdateScope(ctx context.Context, connection string, fn func(current []byte) (Scope, error)) (Scope, error)
	ScopeHolders(ctx context.Context, tool string, actions []string) ([]string, error)

	PutAccessToken(ctx context.Context, t AccessToken) error
	AccessToken(ctx context.Context, hash []byte) (AccessToken, error)
	DeleteAccessToken(ctx context.Context, hash []byte) error

	// The limits (limit.Store): a store shared by nodes shares the counts
	// (issue 15, defect 7).
	limit.Store
}

// Client is a registered OAuth client: by dynamic registration, or known
// from its metadata document (then its id is the document's URL).
type Client struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	RedirectURIs []string  `json:"redirectUris"`
	Kind         string    `json:"kind"` // "dcr" | "cimd"
	CreatedAt    time.Time `json:"createdAt"`
	// LastUsed is when a token was last issued to the client or
	// refreshed by it (zero: never).
	LastUsed time.Time `json:"lastUsed,omitzero"`
}

// End is when a client can go: ClientIdleTTL after its last token, or
// ClientUnusedTTL after its registration when it never got one.
func (c Client) End() time.Time {
	if c.LastUsed.IsZero() {
		return c.CreatedAt.Add(ClientUnusedTTL)
	}
	return c.LastUsed.Add(ClientIdleTTL)
}

// ClientTouch is what Store.TouchClient does to the stored client (found:
// whether there is one), for a store to apply in its transaction: it
// records now as the last use and reports whether the record must be
// written, which is at most hourly (a LastUsed less than an hour old is
// kept). A client the store does not hold is ErrNotFound.
func ClientTouch(now time.Time) func(c *Client, found bool) (bool, error) {
	return func(c *Client, found bool) (bool, error) {
		switch {
		case !found:
			return false, ErrNotFound
		case now.Sub(c.LastUsed) < time.Hour:
			return false, nil
		}
		c.LastUsed = now.UTC()
		return true, nil
	}
}

// Connect request states.
const (
	RequestPending = "pending"
	// RequestConfirming: approved through the approval link, waiting for
	// the approving browser's proof that it opened the waiting page.
	RequestConfirming = "confirming"
	RequestApproved   = "approved"
	RequestDeclined   = "declined"
	RequestExpired    = "expired"
	RequestExchanged  = "exchanged" // its authorization code was used
)

// ConnectRequest is one /authorize request waiting for the person, and
// what came of it.
type ConnectRequest struct {
	ID            string `json:"id"`       // in the status URL; not enough alone
	WaitHash      []byte `json:"waitHash"` // the waiting page's cookie, hashed
	CodeHash      []byte `json:"codeHash"` // the connect code, hashed
	ClientID      string `json:"clientId"`
	ClientName    string `json:"clientName"`
	RedirectURI   string `json:"redirectUri"`
	CodeChallenge string `json:"codeChallenge"`
	State         string `json:"state"` // the client's state, passed through
	Resource      string `json:"resource"`
	// RequestedScope is the entries of the request's scope parameter that
	// name the catalogue's tools and actions (connect-info shows them).
	RequestedScope []protocol.ScopeEntry `json:"requestedScope,omitempty"`
	CreatedAt      time.Time             `json:"createdAt"`
	ExpiresAt      time.Time             `json:"expiresAt"` // of the connect code
	Status         string                `json:"status"`
	// Network is the network the request came from (limit.Network of its
	// address): a tab of that network looks its code up within its own
	// wrong-code limits, not the relay's (oauth/tab.go).
	Network string `json:"network,omitempty"`
	// Where the waiting page's request came from: the browser family and
	// system its User-Agent names, and its address hashed (compared with
	// an approving tab's, never shown).
	Device   string `json:"device,omitempty"`
	AddrHash []byte `json:"addrHash,omitempty"`

	// Set when the person decided.
	PairingID    string    `json:"pairingId,omitempty"`
	ConnectionID string    `json:"connectionId,omitempty"`
	DecidedAt    time.Time `json:"decidedAt,omitempty"`
	// A link approval (RequestConfirming): the scope chosen, and the
	// hashed handle of the relay page that proves the browser.
	ApprovedScope []protocol.ScopeEntry `json:"approvedScope,omitempty"`
	ConfirmHash   []byte                `json:"confirmHash,omitempty"`
	DeclineReason string                `json:"declineReason,omitempty"` // DeclinedOtherBrowser, or "" (the person declined)

	// The authorization code, once the waiting page fetched it.
	AuthCodeHash      []byte    `json:"authCodeHash,omitempty"`
	AuthCodeExpiresAt time.Time `json:"authCodeExpiresAt,omitempty"`
	// FamilyID is the refresh family the code was exchanged for: a second
	// use of the code revokes it (SPEC §5).
	FamilyID string `json:"familyId,omitempty"`
}

// Connection is one approved grant of one host to one pairing (SPEC §1):
// known by its id, never by its display name.
type Connection struct {
	ID         string    `json:"id"`
	Kind       string    `json:"kind"` // "connector"
	PairingID  string    `json:"pairingId"`
	ClientID   string    `json:"clientId"`
	ClientName string    `json:"clientName"`
	Host       string    `json:"host"` // the client's redirect host
	CreatedAt  time.Time `json:"createdAt"`
	LastUsed   time.Time `json:"lastUsed"`
	Revoked    bool      `json:"revoked,omitempty"`
	// ParentID is the connection a derived one was minted from (token
	// exchange): its scope never exceeds its parent's, and it ends with it.
	// RootID is the connection a person approved at the top of its tree
	// (a record stored before issue 23 has none; it was never counted).
	ParentID string `json:"parentId,omitempty"`
	RootID   string `json:"rootId,omitempty"`
	// ExpiresAt ends the connection: a person's ConnectionTTL after its
	// approval, a derived one with its token. An ended one is dead and the
	// store drops it (End).
	ExpiresAt time.Time `json:"expiresAt,omitempty"`
}

// End is when a connection ends: its ExpiresAt, or for a person's
// connection stored before connections had one, ConnectionTTL after its
// approval.
func (c Connection) End() time.Time {
	if c.ExpiresAt.IsZero() {
		return c.CreatedAt.Add(ConnectionTTL)
	}
	return c.ExpiresAt
}

// Derived reports whether c was derived by a token exchange and counted
// in its tree's indexes (PutDerivedConnection).
func (c Connection) Derived() bool { return c.ParentID != "" && c.RootID != "" }

// DerivedLimits bound the live derived connections (issue 23 §2): of one
// connection, of one tree under a connection a person approved, and of
// one browser. docs/security.md says why these numbers.
type DerivedLimits struct {
	PerParent, PerRoot, PerPairing int
}

// The kinds of DerivedFull.Limit.
const (
	LimitParent  = "parent"
	LimitRoot    = "root"
	LimitPairing = "pairing"
)

// DerivedFull is PutDerivedConnection's refusal: which limit is reached
// (LimitParent, LimitRoot, LimitPairing) and how many live there.
type DerivedFull struct {
	Limit string
	Live  int
}

func (e *DerivedFull) Error() string {
	return "derived connections full (" + e.Limit + ": " + strconv.Itoa(e.Live) + " live)"
}

// Scope is a connection's grant over the catalogue, as the person chose it
// (SPEC §8), kept as its own record by connection id.
type Scope struct {
	Version   int                   `json:"version"`
	Entries   []protocol.ScopeEntry `json:"entries"`
	UpdatedAt time.Time             `json:"updatedAt"`
	UpdatedBy string                `json:"updatedBy"` // "tab" | "admin:<who>"
}

// Family is the chain of refresh tokens of one grant. Only the newest
// (Current) refreshes; Previous may be presented again within the grace
// (a client that lost a response); anything older is reuse.
type Family struct {
	ID             string    `json:"id"`
	ConnectionID   string    `json:"connectionId"`
	PairingID      string    `json:"pairingId"`
	ClientID       string    `json:"clientId"`
	Resource       string    `json:"resource"`
	CreatedAt      time.Time `json:"createdAt"`
	LastUsed       time.Time `json:"lastUsed"`
	AbsoluteExpiry time.Time `json:"absoluteExpiry"`
	Revoked        bool      `json:"revoked,omitempty"`
	Current        []byte    `json:"current"`
	Previous       []byte    `json:"previous,omitempty"`
	RotatedAt      time.Time `json:"rotatedAt,omitempty"` // when Previous was rotated out
	GraceRetries   int       `json:"graceRetries,omitempty"`
	Superseded     [][]byte  `json:"superseded,omitempty"` // older hashes, newest last (bounded)
}

// Hashes returns every refresh hash the family answers for.
func (f *Family) Hashes() [][]byte {
	out := make([][]byte, 0, len(f.Superseded)+2)
	if f.Current != nil {
		out = append(out, f.Current)
	}
	if f.Previous != nil {
		out = append(out, f.Previous)
	}
	return append(out, f.Superseded...)
}

// AccessToken is an issued access token, by its hash.
type AccessToken struct {
	Hash         []byte    `json:"hash"`
	FamilyID     string    `json:"familyId"`
	ConnectionID string    `json:"connectionId"`
	PairingID    string    `json:"pairingId"`
	ClientID     string    `json:"clientId"`
	Resource     string    `json:"resource"`
	ExpiresAt    time.Time `json:"expiresAt"`
}
