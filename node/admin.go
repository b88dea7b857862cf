package node

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

	"github.com/tabrelay/tabrelay/oauth"
	"github.com/tabrelay/tabrelay/protocol"
)

// The admin API (SPEC §8, §9) lives on the admin listener, beside the
// open /metrics, and answers only a bearer token equal to
// RELAY_ADMIN_TOKEN. It is how an operator reads and writes a
// connection's scope (`tabrelay scope …`); nothing an MCP request carries
// reaches it.
//
//	GET    /admin/scopes/{conn}            the connection's scope record
//	POST   /admin/scopes/{conn}            {"entries":[…]} added to it
//	PUT    /admin/scopes/{conn}            {"entries":[…]} replaces it
//	DELETE /admin/scopes/{conn}            no access
//	GET    /admin/scopes?tool=X[&action=Y] which connections may use X (Y)
//
// Errors are {"error": code, "message": sentence}: 400 bad request or
// scope, 401 wrong or missing token, 404 unknown connection (or, with the
// code admin-disabled, no token configured), 413 body too large, 503 the
// store failed.

// adminBodyLimit bounds a request body of the admin API.
const adminBodyLimit = 64 << 10

// Error codes of the admin API.
const (
	AdminErrDisabled     = "admin-disabled"
	AdminErrUnauthorized = "unauthorized"
	AdminErrNotFound     = "not-found"
	AdminErrBadRequest   = "bad-request"
	AdminErrTooLarge     = "too-large"
	AdminErrUnavailable  = "unavailable"
)

// adminWho is what X-Admin-Who may say: it lands in updatedBy and the log.
var adminWho = regexp.MustCompile(`^[A-Za-z0-9._@-]{1,64}$`)

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

// adminAPI mounts the admin API on the admin listener's mux.
func (n *Node) adminAPI(mux *http.ServeMux) {
	mux.Handle("/admin/", n.adminAuth(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		adminError(w, http.StatusNotFound, AdminErrNotFound, "The admin API has no such route.")
	})))
	mux.Handle("/admin/scopes", n.adminAuth(http.HandlerFunc(n.adminHolders)))
	mux.Handle("/admin/scopes/{conn}", n.adminAuth(http.HandlerFunc(n.adminScope)))
}

// adminAuth lets through only a request bearing the admin token. The
// token and the presented value are hashed first, so that the
// constant-time comparison does not reveal the token's length either.
func (n *Node) adminAuth(next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(n.cfg.AdminToken))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.cfg.AdminToken == "" {
			adminError(w, http.StatusNotFound, AdminErrDisabled,
				"The admin API is off on this relay: start it with RELAY_ADMIN_TOKEN set (16 characters or more).")
			return
		}
		got, ok := bearerToken(r)
		sum := sha256.Sum256([]byte(got))
		if subtle.ConstantTimeCompare(sum[:], want[:]) != 1 || !ok {
			n.log.Warn("admin request refused: wrong or missing token", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
			w.Header().Set("WWW-Authenticate", `Bearer realm="tabrelay-admin"`)
			adminError(w, http.StatusUnauthorized, AdminErrUnauthorized,
				"The admin token is wrong or missing: send Authorization: Bearer <RELAY_ADMIN_TOKEN>.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// adminScope reads or writes one connection's scope.
func (n *Node) adminScope(w http.ResponseWriter, r *http.Request) {
	conn := r.PathValue("conn")
	if len(conn) > 200 {
		adminError(w, http.StatusNotFound, AdminErrNotFound, "There is no connection "+quote(conn)+".")
		return
	}
	ctx := r.Context()
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		v, err := n.scopeView(ctx, conn, nil)
		if err != nil {
			n.adminFailed(w, conn, err)
			return
		}
		writeJSON(w, http.StatusOK, v)
		return
	}
	var entries []protocol.ScopeEntry
	add := false
	switch r.Method {
	case http.MethodPost, http.MethodPut:
		var body struct {
			Entries *[]protocol.ScopeEntry `json:"entries"`
		}
		if status, msg := decodeBody(w, r, &body); status != 0 {
			code := AdminErrBadRequest
			if status == http.StatusRequestEntityTooLarge {
				code = AdminErrTooLarge
			}
			adminError(w, status, code, msg)
			return
		}
		if body.Entries == nil {
			adminError(w, http.StatusBadRequest, AdminErrBadRequest, `The body needs "entries": a list of {"tool": …, "actions": […]}.`)
			return
		}
		entries, add = *body.Entries, r.Method == http.MethodPost
		if add && len(entries) == 0 {
			adminError(w, http.StatusBadRequest, AdminErrBadRequest, "Name at least one tool to add (PUT with no entries, or DELETE, takes every access away).")
			return
		}
	case http.MethodDelete:
		entries = []protocol.ScopeEntry{}
	default:
		w.Header().Set("Allow", "GET, HEAD, POST, PUT, DELETE")
		adminError(w, http.StatusMethodNotAllowed, AdminErrBadRequest, "Use GET, POST, PUT or DELETE.")
		return
	}
	who := r.Header.Get("X-Admin-Who")
	if who == "" {
		who = "cli"
	}
	if !adminWho.MatchString(who) {
		adminError(w, http.StatusBadRequest, AdminErrBadRequest, "X-Admin-Who must be 1 to 64 letters, digits or . _ @ -.")
		return
	}
	c, err := n.store.Connection(ctx, conn)
	if err == nil && c.Revoked {
		// A forgotten connection keeps an empty scope: granting it
		// anything would only put it back into the reverse index.
		adminError(w, http.StatusNotFound, AdminErrNotFound, "The connection "+quote(conn)+" was forgotten by the person; it may use nothing.")
		return
	}
	if err != nil {
		n.adminFailed(w, conn, err)
		return
	}
	sc, err := n.oauth.WriteScope(ctx, conn, entries, add, "admin:"+who)
	if err != nil {
		n.adminFailed(w, conn, err)
		return
	}
	// Forgotten meanwhile: Forget's empty record may have been overwritten.
	if c, err := n.store.Connection(ctx, conn); err == nil && c.Revoked {
		if _, err := n.oauth.WriteScope(ctx, conn, nil, false, "admin:"+who); err != nil {
			n.log.Error("clear the scope of a connection forgotten during an admin write", "connection", conn, "err", err)
		}
		adminError(w, http.StatusNotFound, AdminErrNotFound, "The connection "+quote(conn)+" was forgotten by the person; it may use nothing.")
		return
	}
	v, err := n.scopeView(ctx, conn, &sc)
	if err != nil {
		n.adminFailed(w, conn, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// scopeView reads what the admin API shows of a connection's scope; sc is
// the record just written, if any.
func (n *Node) scopeView(ctx context.Context, conn string, sc *oauth.Scope) (ScopeView, error) {
	c, err := n.store.Connection(ctx, conn)
	if err != nil {
		return ScopeView{}, err
	}
	v := ScopeView{Connection: c.ID, Client: c.ClientName, Host: c.Host, Entries: []protocol.ScopeEntry{}, Revoked: c.Revoked, Parent: c.ParentID}
	if sc == nil {
		got, err := n.oauth.Scope(ctx, conn)
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
		resolved, err := n.oauth.ResolvedScope(ctx, conn)
		if err != nil {
			return ScopeView{}, err
		}
		all := append([]protocol.ScopeEntry{}, resolved...)
		v.Resolved = &all
	}
	return v, nil
}

// adminHolders answers which connections may use a tool (and an action).
func (n *Node) adminHolders(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		adminError(w, http.StatusMethodNotAllowed, AdminErrBadRequest, "Use GET.")
		return
	}
	tool, action := r.URL.Query().Get("tool"), r.URL.Query().Get("action")
	t, ok := n.cfg.Bundle.Tool(tool)
	switch {
	case tool == "":
		adminError(w, http.StatusBadRequest, AdminErrBadRequest, "Name the tool: /admin/scopes?tool=NAME[&action=NAME].")
		return
	case !ok:
		adminError(w, http.StatusBadRequest, AdminErrBadRequest, "The catalogue has no tool "+quote(tool)+".")
		return
	case action != "" && action != "*" && !toolHasAction(t, action):
		adminError(w, http.StatusBadRequest, AdminErrBadRequest, "The tool "+quote(tool)+" has no action "+quote(action)+".")
		return
	}
	conns, err := n.oauth.ScopeHolders(r.Context(), tool, action)
	if err != nil {
		n.adminFailed(w, "", err)
		return
	}
	if conns == nil {
		conns = []string{}
	}
	writeJSON(w, http.StatusOK, HoldersView{Tool: tool, Action: action, Connections: conns})
}

func toolHasAction(t *protocol.Tool, name string) bool {
	for _, a := range t.Actions {
		if a.Name == name {
			return true
		}
	}
	return false
}

// adminFailed answers an error of the oauth server or the store.
func (n *Node) adminFailed(w http.ResponseWriter, conn string, err error) {
	var rerr *protocol.RequestError
	switch {
	case errors.Is(err, oauth.ErrNotFound):
		adminError(w, http.StatusNotFound, AdminErrNotFound, "There is no connection "+quote(conn)+".")
	case errors.As(err, &rerr):
		// invalid-scope and its kin: the catalogue's words were not used.
		adminError(w, http.StatusBadRequest, rerr.Code, n.untag(rerr.Message))
	default:
		n.log.Error("admin request failed", "connection", conn, "err", err)
		adminError(w, http.StatusServiceUnavailable, AdminErrUnavailable, "The relay's store failed; try again.")
	}
}

// untag turns the names the oauth server quotes for a model
// (<tag>"name"</tag>) into plain quoted names for a person.
func (n *Node) untag(msg string) string {
	tag := n.cfg.Bundle.Tag()
	return strings.NewReplacer("<"+tag+">", "", "</"+tag+">", "").Replace(msg)
}

// decodeBody reads a JSON body of at most adminBodyLimit bytes into v; a
// non-zero status says why it could not.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) (int, string) {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, adminBodyLimit))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			return http.StatusBadRequest, "The body must be one JSON object."
		}
		return 0, ""
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return http.StatusRequestEntityTooLarge, "The body is larger than 64 KiB."
	}
	return http.StatusBadRequest, "The body is not the JSON expected: " + err.Error() + "."
}

func adminError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]string{"error": code, "message": msg})
}

// quote quotes a name from a request for an error message.
func quote(s string) string { return strconv.Quote(s) }
