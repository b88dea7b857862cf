package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tabrelay/tabrelay/internal/httpx"
	"github.com/tabrelay/tabrelay/oauth"
	"github.com/tabrelay/tabrelay/protocol"
)

// bodyLimit bounds a request body of the admin API.
const bodyLimit = 64 << 10

// whoPattern is what X-Admin-Who may say: it lands in updatedBy and the log.
var whoPattern = regexp.MustCompile(`^[A-Za-z0-9._@-]{1,64}$`)

// ScopeView is a connection's scope as the admin API shows it.
type ScopeView struct {
	Connection string `json:"connection"`
	Client     string `json:"client,omitempty"`
	Host       string `json:"host,omitempty"`
	// Version is the stored record's version; 0 when there is no record
	// or it cannot be read.
	Version   int                   `json:"version"`
	Entries   []protocol.ScopeEntry `json:"entries"`
	UpdatedAt *time.Time            `json:"updatedAt,omitempty"`
	UpdatedBy string                `json:"updatedBy,omitempty"`
	// Unreadable: a record is stored but does not parse. The guard grants
	// nothing for it (SPEC §8), so Entries is empty, which is the truth
	// about what the connection may use; writing the scope anew (PUT or
	// DELETE) repairs it.
	Unreadable bool `json:"unreadable,omitempty"`
	// Revoked: the person forgot the connection; it may use nothing.
	Revoked bool `json:"revoked,omitempty"`
	// Parent and Resolved, for a derived connection: what it may use is
	// its parent's resolved scope, narrowed by its own entries if any.
	Parent   string                 `json:"parent,omitempty"`
	Resolved *[]protocol.ScopeEntry `json:"resolved,omitempty"`
}

// HoldersView answers the reverse question.
type HoldersView struct {
	Tool        string   `json:"tool"`
	Action      string   `json:"action,omitempty"`
	Connections []string `json:"connections"`
}

// auth lets through only a request bearing the admin token. The
// token and the presented value are hashed first, so that the
// constant-time comparison does not reveal the token's length either.
func (a *API) auth(next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(a.cfg.Token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.cfg.Token == "" {
			writeError(w, protocol.ErrAdminDisabled)
			return
		}
		got, ok := httpx.Bearer(r)
		sum := sha256.Sum256([]byte(got))
		if subtle.ConstantTimeCompare(sum[:], want[:]) != 1 || !ok {
			a.cfg.Logger.Warn("admin request refused: wrong or missing token", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
			w.Header().Set("WWW-Authenticate", `Bearer realm="tabrelay-admin"`)
			writeError(w, protocol.ErrUnauthorized.With("The admin token is wrong or missing: send Authorization: Bearer <RELAY_ADMIN_TOKEN>."))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// scope reads or writes one connection's scope.
func (a *API) scope(w http.ResponseWriter, r *http.Request) {
	conn := r.PathValue("conn")
	if len(conn) > 200 {
		writeError(w, protocol.ErrNotFound.With("There is no connection "+quote(conn)+"."))
		return
	}
	ctx := r.Context()
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		v, err := a.scopeView(ctx, conn, nil)
		if err != nil {
			a.failed(w, conn, err)
			return
		}
		httpx.WriteJSON(w, http.StatusOK, v)
		return
	}
	var entries []protocol.ScopeEntry
	add := false
	switch r.Method {
	case http.MethodPost, http.MethodPut:
		var body struct {
			Entries *[]protocol.ScopeEntry `json:"entries"`
		}
		if err := decodeBody(w, r, &body); err != nil {
			writeError(w, err)
			return
		}
		if body.Entries == nil {
			writeError(w, protocol.ErrBadRequest.With(`The body needs "entries": a list of {"tool": …, "actions": […]}.`))
			return
		}
		entries, add = *body.Entries, r.Method == http.MethodPost
		if add && len(entries) == 0 {
			writeError(w, protocol.ErrBadRequest.With("Name at least one tool to add (PUT with no entries, or DELETE, takes every access away)."))
			return
		}
	case http.MethodDelete:
		entries = []protocol.ScopeEntry{}
	default:
		w.Header().Set("Allow", "GET, HEAD, POST, PUT, DELETE")
		writeError(w, protocol.ErrMethodNotAllowed.With("Use GET, POST, PUT or DELETE."))
		return
	}
	who := r.Header.Get("X-Admin-Who")
	if who == "" {
		who = "cli"
	}
	if !whoPattern.MatchString(who) {
		writeError(w, protocol.ErrBadRequest.With("X-Admin-Who must be 1 to 64 letters, digits or . _ @ -."))
		return
	}
	c, err := a.cfg.Connections.Connection(ctx, conn)
	if err == nil && c.Revoked {
		// A forgotten connection keeps an empty scope: granting it
		// anything would only put it back into the reverse index.
		writeError(w, protocol.ErrNotFound.With("The connection "+quote(conn)+" was forgotten by the person; it may use nothing."))
		return
	}
	if err != nil {
		a.failed(w, conn, err)
		return
	}
	sc, err := a.cfg.Scopes.WriteScope(ctx, conn, entries, add, "admin:"+who)
	if err != nil {
		a.failed(w, conn, err)
		return
	}
	// Forgotten meanwhile: Forget's empty record may have been overwritten.
	if c, err := a.cfg.Connections.Connection(ctx, conn); err == nil && c.Revoked {
		if _, err := a.cfg.Scopes.WriteScope(ctx, conn, nil, false, "admin:"+who); err != nil {
			a.cfg.Logger.Error("clear the scope of a connection forgotten during an admin write", "connection", conn, "err", err)
		}
		writeError(w, protocol.ErrNotFound.With("The connection "+quote(conn)+" was forgotten by the person; it may use nothing."))
		return
	}
	v, err := a.scopeView(ctx, conn, &sc)
	if err != nil {
		a.failed(w, conn, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, v)
}

// scopeView reads what the admin API shows of a connection's scope; sc is
// the record just written, if any.
func (a *API) scopeView(ctx context.Context, conn string, sc *oauth.Scope) (ScopeView, error) {
	c, err := a.cfg.Connections.Connection(ctx, conn)
	if err != nil {
		return ScopeView{}, err
	}
	v := ScopeView{Connection: c.ID, Client: c.ClientName, Host: c.Host, Entries: []protocol.ScopeEntry{}, Revoked: c.Revoked, Parent: c.ParentID}
	if sc == nil {
		got, err := a.cfg.Scopes.Scope(ctx, conn)
		switch {
		case errors.Is(err, oauth.ErrScopeUnreadable):
			v.Unreadable = true
		case errors.Is(err, oauth.ErrNotFound):
			// No record of its own: no access, or its parent's (derived).
		case err != nil:
			return ScopeView{}, err
		default:
			sc = &got
		}
	}
	if sc != nil {
		v.Version, v.UpdatedBy = sc.Version, sc.UpdatedBy
		if !sc.UpdatedAt.IsZero() {
			at := sc.UpdatedAt.UTC()
			v.UpdatedAt = &at
		}
		if sc.Entries != nil {
			v.Entries = sc.Entries
		}
	}
	if c.Revoked {
		v.Entries = []protocol.ScopeEntry{}
	}
	if c.ParentID != "" {
		resolved, err := a.cfg.Scopes.ResolvedScope(ctx, conn)
		if err != nil {
			return ScopeView{}, err
		}
		all := append([]protocol.ScopeEntry{}, resolved...)
		v.Resolved = &all
	}
	return v, nil
}

// holders answers which connections may use a tool (and an action).
func (a *API) holders(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, protocol.ErrMethodNotAllowed.With("Use GET."))
		return
	}
	tool, action := r.URL.Query().Get("tool"), r.URL.Query().Get("action")
	t, ok := a.cfg.Bundle.Tool(tool)
	switch {
	case tool == "":
		writeError(w, protocol.ErrBadRequest.With("Name the tool: /admin/scopes?tool=NAME[&action=NAME]."))
		return
	case !ok:
		writeError(w, protocol.ErrBadRequest.With("The catalogue has no tool "+quote(tool)+"."))
		return
	case action != "" && action != protocol.AllActions && !t.HasAction(action):
		writeError(w, protocol.ErrBadRequest.With("The tool "+quote(tool)+" has no action "+quote(action)+"."))
		return
	}
	conns, err := a.cfg.Scopes.ScopeHolders(r.Context(), tool, action)
	if err != nil {
		a.failed(w, "", err)
		return
	}
	if conns == nil {
		conns = []string{}
	}
	httpx.WriteJSON(w, http.StatusOK, HoldersView{Tool: tool, Action: action, Connections: conns})
}

// failed answers an error of the oauth server or the store.
func (a *API) failed(w http.ResponseWriter, conn string, err error) {
	var rerr *protocol.RelayError
	switch {
	case errors.Is(err, oauth.ErrNotFound):
		writeError(w, protocol.ErrNotFound.With("There is no connection "+quote(conn)+"."))
	case errors.As(err, &rerr):
		// invalid-scope and its kin: the catalogue's words were not used.
		writeError(w, rerr.With(a.untag(rerr.Message)))
	default:
		a.cfg.Logger.Error("admin request failed", "connection", conn, "err", err)
		writeError(w, protocol.ErrUnavailable.With("The relay's store failed; try again."))
	}
}

// untag turns the names the oauth server quotes for a model
// (<tag>"name"</tag>) into plain quoted names for a person.
func (a *API) untag(msg string) string {
	tag := a.cfg.Bundle.Tag()
	return strings.NewReplacer("<"+tag+">", "", "</"+tag+">", "").Replace(msg)
}

// decodeBody reads a JSON body of at most bodyLimit bytes into v, or
// says why it could not.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) *protocol.RelayError {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, bodyLimit))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			return protocol.ErrBadRequest.With("The body must be one JSON object.")
		}
		return nil
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return protocol.ErrTooLarge.With("The body is larger than 64 KiB.")
	}
	return protocol.ErrBadRequest.With("The body is not the JSON expected: " + err.Error() + ".")
}

// writeError answers e as the admin API's error body, {"error": code,
// "message": sentence}, at e's status: the relay's own code, not an OAuth
// one (the admin token is no OAuth token).
func writeError(w http.ResponseWriter, e *protocol.RelayError) {
	httpx.WriteJSON(w, e.Status, map[string]string{"error": e.Code, "message": e.Message})
}

// quote quotes a name from a request for an error message.
func quote(s string) string { return strconv.Quote(s) }
