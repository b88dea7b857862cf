package livecheck

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// serverMeta is what the live check reads of the authorization server's
// metadata (RFC 8414).
type serverMeta struct {
	Issuer        string   `json:"issuer"`
	Authorize     string   `json:"authorization_endpoint"`
	Token         string   `json:"token_endpoint"`
	Register      string   `json:"registration_endpoint"`
	Revoke        string   `json:"revocation_endpoint"`
	Challenges    []string `json:"code_challenge_methods_supported"`
	AuthMethods   []string `json:"token_endpoint_auth_methods_supported"`
	ISSParameter  bool     `json:"authorization_response_iss_parameter_supported"`
	CIMDSupported bool     `json:"client_id_metadata_document_supported"`
}

// client is a registered OAuth client of the live check.
type client struct {
	id, name, redirectURI string
	kind                  string // "registered" or "metadata-document"
}

// flow is one authorization request in progress.
type flow struct {
	client                 client
	verifier, state        string
	connectCode, statusURL string
	approveURL             string // the waiting page's link into the app ("" without APP_URL)
}

// tokens is a token response's pair.
type tokens struct {
	access, refresh string
	expiresIn       float64
}

var (
	codeAttr    = regexp.MustCompile(`data-connect-code="([^"]+)"`)
	statusAttr  = regexp.MustCompile(`data-status-url="([^"]+)"`)
	approveHref = regexp.MustCompile(`href="([^"]*#tabrelay-connect=[^"]*)"`)
)

// random is 256 random bits, unpadded base64url.
func random() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// register registers a public client by dynamic registration (RFC 7591).
func (l *live) register(ctx context.Context, name string) (client, error) {
	c := client{name: name, redirectURI: "http://127.0.0.1/tabrelay-live-check/callback", kind: "registered"}
	r, err := l.web.postJSON(ctx, l.meta.Register, map[string]any{"client_name": name, "redirect_uris": []string{c.redirectURI},
		"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"},
		"response_types": []string{"code"}, "application_type": "native"})
	if err != nil {
		return c, err
	}
	var out struct {
		ClientID   string `json:"client_id"`
		ClientName string `json:"client_name"`
		Error      string `json:"error_description"`
	}
	if err := r.json(&out); err != nil {
		return c, fmt.Errorf("POST %s: %w", pathOf(l.meta.Register), err)
	}
	switch {
	case r.status != http.StatusCreated:
		return c, fmt.Errorf("POST %s answered %d, want 201: %s", pathOf(l.meta.Register), r.status, out.Error)
	case out.ClientID == "":
		return c, fmt.Errorf("POST %s answered no client_id", pathOf(l.meta.Register))
	}
	c.id = out.ClientID
	return c, nil
}

// authorize opens the authorization endpoint as the person's browser does
// and reads the waiting page: its connect code, status URL and link.
func (l *live) authorize(ctx context.Context, c client) (*flow, error) {
	f := &flow{client: c, verifier: random(), state: random()}
	l.rep.secret(f.verifier)
	l.rep.secret(f.state)
	sum := sha256.Sum256([]byte(f.verifier))
	q := url.Values{"response_type": {"code"}, "client_id": {c.id}, "redirect_uri": {c.redirectURI},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"},
		"state": {f.state}, "resource": {l.relay}}
	r, err := l.web.get(ctx, l.meta.Authorize+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	page := string(r.body)
	if m := codeAttr.FindStringSubmatch(page); m != nil {
		f.connectCode = html.UnescapeString(m[1])
		l.rep.secret(f.connectCode)
		l.rep.secret(strings.ReplaceAll(f.connectCode, "-", ""))
	}
	if m := approveHref.FindStringSubmatch(page); m != nil {
		f.approveURL = html.UnescapeString(m[1])
	}
	if r.status != http.StatusOK {
		return nil, fmt.Errorf("GET %s answered %d, not the waiting page: %s", pathOf(l.meta.Authorize), r.status, clip(pageText(page), 160))
	}
	m := statusAttr.FindStringSubmatch(page)
	if f.connectCode == "" || m == nil {
		return nil, fmt.Errorf("the waiting page has no connect code or status URL (data-connect-code, data-status-url)")
	}
	f.statusURL = html.UnescapeString(m[1])
	l.rep.secret(strings.TrimPrefix(f.statusURL, l.relay))
	if !strings.Contains(page, html.EscapeString(c.name)) {
		return nil, fmt.Errorf("the waiting page does not show the client's name %q", c.name)
	}
	return f, nil
}

// pageText is an HTML page's text, roughly, for a message.
func pageText(page string) string {
	page = regexp.MustCompile(`(?s)<(script|style)[^>]*>.*?</(script|style)>`).ReplaceAllString(page, " ")
	return html.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(page, " "))
}

// status reads the waiting page's status once: {state, redirect, error}.
func (l *live) status(ctx context.Context, f *flow) (map[string]string, error) {
	r, err := l.web.get(ctx, f.statusURL)
	if err != nil {
		return nil, err
	}
	var st map[string]string
	if err := r.json(&st); err != nil {
		return nil, fmt.Errorf("the waiting page's status: %w", err)
	}
	if r.status != http.StatusOK {
		return nil, fmt.Errorf("the waiting page's status answered %d: %s", r.status, st["error"])
	}
	return st, nil
}

// awaitCode polls the waiting page's status until it sends the browser
// back, and reads the authorization response: the code, state and iss.
func (l *live) awaitCode(ctx context.Context, f *flow) (string, error) {
	for {
		st, err := l.status(ctx, f)
		if err != nil {
			return "", err
		}
		if st["redirect"] != "" {
			l.rep.secret(st["redirect"])
			return l.codeFrom(f, st)
		}
		if st["state"] != "pending" && st["state"] != "approved" {
			return "", fmt.Errorf("the waiting page's status is %q, with no way back to the client", st["state"])
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("the waiting page still says %q after the approval: no authorization code within the check's time", st["state"])
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (l *live) codeFrom(f *flow, st map[string]string) (string, error) {
	u, err := url.Parse(st["redirect"])
	if err != nil || !strings.HasPrefix(st["redirect"], f.client.redirectURI+"?") {
		return "", fmt.Errorf("the waiting page returns to another address than the client's redirect URI")
	}
	q := u.Query()
	l.rep.secret(q.Get("code"))
	switch {
	case q.Get("error") != "":
		return "", fmt.Errorf("the waiting page returns %s: %s", q.Get("error"), q.Get("error_description"))
	case st["state"] != "approved":
		return "", fmt.Errorf("the waiting page's status is %q with a redirect", st["state"])
	case q.Get("code") == "":
		return "", fmt.Errorf("the authorization response has no code")
	case q.Get("state") != f.state:
		return "", fmt.Errorf("the authorization response's state is not the request's")
	case q.Get("iss") != l.meta.Issuer:
		return "", fmt.Errorf("the authorization response's iss is %q, not the issuer %s", q.Get("iss"), l.meta.Issuer)
	}
	return q.Get("code"), nil
}

// tokenReply is a /token answer.
type tokenReply struct {
	status                  int
	cacheControl            string
	access, refresh, kind   string
	expiresIn               float64
	errCode, errDescription string
}

func (l *live) token(ctx context.Context, form url.Values) (tokenReply, error) {
	r, err := l.web.postForm(ctx, l.meta.Token, form)
	if err != nil {
		return tokenReply{}, err
	}
	var out struct {
		Access    string  `json:"access_token"`
		Refresh   string  `json:"refresh_token"`
		Type      string  `json:"token_type"`
		ExpiresIn float64 `json:"expires_in"`
		Error     string  `json:"error"`
		Desc      string  `json:"error_description"`
	}
	if err := r.json(&out); err != nil {
		return tokenReply{}, fmt.Errorf("POST %s: %w", pathOf(l.meta.Token), err)
	}
	l.rep.secret(out.Access)
	l.rep.secret(out.Refresh)
	return tokenReply{status: r.status, cacheControl: r.header.Get("Cache-Control"), access: out.Access, refresh: out.Refresh,
		kind: out.Type, expiresIn: out.ExpiresIn, errCode: out.Error, errDescription: out.Desc}, nil
}

// exchange redeems an authorization code with the flow's verifier.
func (l *live) exchange(ctx context.Context, f *flow, code, verifier string) (tokenReply, error) {
	return l.token(ctx, url.Values{"grant_type": {"authorization_code"}, "client_id": {f.client.id}, "code": {code},
		"redirect_uri": {f.client.redirectURI}, "code_verifier": {verifier}, "resource": {l.relay}})
}

// refresh presents a refresh token.
func (l *live) refresh(ctx context.Context, c client, token string) (tokenReply, error) {
	return l.token(ctx, url.Values{"grant_type": {"refresh_token"}, "client_id": {c.id}, "refresh_token": {token}, "resource": {l.relay}})
}

// issued checks a token reply that must carry a fresh pair.
func (t tokenReply) issued(what string) (tokens, error) {
	switch {
	case t.status != http.StatusOK:
		return tokens{}, fmt.Errorf("%s answered %d %s: %s", what, t.status, t.errCode, t.errDescription)
	case t.access == "" || t.refresh == "":
		return tokens{}, fmt.Errorf("%s answered no access or no refresh token", what)
	case !strings.EqualFold(t.kind, "Bearer"):
		return tokens{}, fmt.Errorf("%s answered token_type %q, not Bearer", what, t.kind)
	case !strings.Contains(t.cacheControl, "no-store"):
		return tokens{}, fmt.Errorf("%s answered without Cache-Control: no-store", what)
	}
	return tokens{access: t.access, refresh: t.refresh, expiresIn: t.expiresIn}, nil
}

// revoke ends a token (RFC 7009), quietly: the cleanup's.
func (l *live) revoke(ctx context.Context, c client, token string) {
	if l.meta.Revoke == "" || token == "" {
		return
	}
	_, _ = l.web.postForm(ctx, l.meta.Revoke, url.Values{"token": {token}, "client_id": {c.id}})
}

// hasAll reports whether list holds every one of want.
func hasAll(list []string, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(list, w) {
			return false
		}
	}
	return true
}
