package livecheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// checks are the live check's lines, in order; each needs the ones named.
func (l *live) checks() []check {
	authorizeNeeds := []string{"registration"}
	if l.opts.ClientIDURL != "" {
		authorizeNeeds = append(authorizeNeeds, "client-metadata")
	}
	return []check{
		{"reachability", nil, l.reachability},
		{"discovery", []string{"reachability"}, l.discovery},
		{"registration", []string{"discovery"}, l.registration},
		{"client-metadata", []string{"discovery"}, l.clientMetadata},
		{"authorize", authorizeNeeds, l.authorizeCheck},
		{"approval", []string{"authorize"}, l.approval},
		{"token", []string{"approval"}, l.tokenCheck},
		{"tools", []string{"token"}, l.toolsCheck},
		{"call", []string{"tools"}, l.call},
		{"view-card", []string{"tools"}, l.viewCard},
		{"idle-pairing", []string{"call"}, l.idle},
		{"rotation", []string{"token"}, l.rotation},
		{"reuse", []string{"rotation"}, l.reuse},
		{"forget", []string{"approval"}, l.forget},
	}
}

// reachability: the node's liveness and readiness.
func (l *live) reachability(ctx context.Context) (string, error) {
	start := time.Now()
	for _, path := range []string{"/health", "/ready"} {
		r, err := l.web.get(ctx, l.relay+path)
		if err != nil {
			return "", fmt.Errorf("%v: is the relay running at %s?", err, l.relay)
		}
		l.rep.debugf("GET %s: %d %s", path, r.status, clip(string(r.body), 200))
		if r.status != http.StatusOK {
			return "", fmt.Errorf("GET %s answered %d, want 200: %s", path, r.status, clip(string(r.body), 120))
		}
	}
	return "GET /health and GET /ready answered 200 in " + since(start), nil
}

var resourceMetadataParam = regexp.MustCompile(`resource_metadata="([^"]+)"`)

// discovery: what a host finds from a 401 (RFC 9728, RFC 8414).
func (l *live) discovery(ctx context.Context) (string, error) {
	r, err := l.web.do(ctx, http.MethodPost, l.relay+"/", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`),
		http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}})
	if err != nil {
		return "", err
	}
	m := resourceMetadataParam.FindStringSubmatch(r.header.Get("WWW-Authenticate"))
	if r.status != http.StatusUnauthorized || m == nil {
		return "", fmt.Errorf("POST / without a token answered %d with WWW-Authenticate %q, want 401 naming resource_metadata", r.status, r.header.Get("WWW-Authenticate"))
	}
	r, err = l.web.get(ctx, m[1])
	if err != nil {
		return "", err
	}
	var prm struct {
		Resource string   `json:"resource"`
		Servers  []string `json:"authorization_servers"`
	}
	if err := r.json(&prm); err != nil {
		return "", fmt.Errorf("the protected-resource metadata: %w", err)
	}
	switch {
	case r.status != http.StatusOK:
		return "", fmt.Errorf("GET %s answered %d", pathOf(m[1]), r.status)
	case prm.Resource != l.relay:
		return "", fmt.Errorf("the protected-resource metadata's resource is %q, not the relay's origin %s: hosts bind tokens to it (is RELAY_PUBLIC_URL the address hosts use?)", prm.Resource, l.relay)
	case len(prm.Servers) == 0:
		return "", errors.New("the protected-resource metadata names no authorization server")
	}
	issuer := strings.TrimSuffix(prm.Servers[0], "/")
	r, err = l.web.get(ctx, issuer+"/.well-known/oauth-authorization-server")
	if err != nil {
		return "", err
	}
	if err := r.json(&l.meta); err != nil || r.status != http.StatusOK {
		return "", fmt.Errorf("the authorization server's metadata (HTTP %d) is not readable: %v", r.status, err)
	}
	meta := l.meta
	switch {
	case meta.Issuer != issuer:
		return "", fmt.Errorf("the authorization server's issuer is %q, not %s", meta.Issuer, issuer)
	case !slices.Contains(meta.Challenges, "S256"):
		return "", fmt.Errorf("the authorization server offers PKCE %v, not S256", meta.Challenges)
	case !slices.Contains(meta.AuthMethods, "none"):
		return "", fmt.Errorf("the authorization server takes no public clients (token_endpoint_auth_methods_supported %v)", meta.AuthMethods)
	case meta.Authorize == "" || meta.Token == "" || meta.Register == "":
		return "", errors.New("the authorization server's metadata lacks the authorization, token or registration endpoint")
	case !meta.ISSParameter:
		return "", errors.New("the authorization server does not say it sends iss in its responses (RFC 9207)")
	}
	return fmt.Sprintf("a 401 names the resource metadata; resource %s; issuer %s with S256, public clients, iss; endpoints %s %s %s",
		prm.Resource, meta.Issuer, pathOf(meta.Authorize), pathOf(meta.Token), pathOf(meta.Register)), nil
}

// registration: dynamic registration of a public client.
func (l *live) registration(ctx context.Context) (string, error) {
	c, err := l.register(ctx, "tabrelay live-check")
	if err != nil {
		return "", err
	}
	l.first = c
	return fmt.Sprintf("POST %s registered the public client %q (201)", pathOf(l.meta.Register), c.name), nil
}

// clientMetadata: a client metadata document as client_id (the first
// connection's client, when given).
func (l *live) clientMetadata(ctx context.Context) (string, error) {
	if l.opts.ClientIDURL == "" {
		return "", skipped{"no --client-id-url given (a client metadata document URL)"}
	}
	if !l.meta.CIMDSupported {
		return "", errors.New("the authorization server does not advertise client_id_metadata_document_supported")
	}
	if !strings.HasPrefix(l.opts.ClientIDURL, "https://") {
		return "", errors.New("--client-id-url must be an https URL: the relay fetches no other")
	}
	r, err := l.web.get(ctx, l.opts.ClientIDURL)
	if err != nil {
		return "", err
	}
	var doc struct {
		ClientID     string   `json:"client_id"`
		ClientName   string   `json:"client_name"`
		RedirectURIs []string `json:"redirect_uris"`
	}
	if err := r.json(&doc); err != nil || r.status != http.StatusOK {
		return "", fmt.Errorf("the client metadata document (HTTP %d) is not readable: %v", r.status, err)
	}
	switch {
	case doc.ClientID != l.opts.ClientIDURL:
		return "", fmt.Errorf("the document's client_id is %q, not its own URL", doc.ClientID)
	case doc.ClientName == "" || len(doc.RedirectURIs) == 0:
		return "", errors.New("the document has no client_name or no redirect_uris")
	}
	l.first = client{id: doc.ClientID, name: doc.ClientName, redirectURI: doc.RedirectURIs[0], kind: "metadata-document"}
	return fmt.Sprintf("the document names %q; the first connection is made by it", doc.ClientName), nil
}

// authorizeCheck: the authorization request and its waiting page.
func (l *live) authorizeCheck(ctx context.Context) (string, error) {
	f, err := l.authorize(ctx, l.first)
	if err != nil {
		return "", err
	}
	st, err := l.status(ctx, f)
	if err != nil {
		return "", err
	}
	if st["state"] != "pending" {
		return "", fmt.Errorf("the waiting page's status is %q before anyone approved, want pending", st["state"])
	}
	l.flow = f
	link := "no link into the app (the relay has no APP_URL)"
	if f.approveURL != "" {
		link = "a link into " + originOf(f.approveURL)
	}
	return fmt.Sprintf("the waiting page shows %q, a connect code, %s; its status says pending", f.client.name, link), nil
}

// approval: the person approves in the app's page, and the waiting page
// returns to the client with an authorization code.
func (l *live) approval(ctx context.Context) (string, error) {
	p, why, err := l.openAndApprove(ctx, l.flow)
	if p != nil {
		l.page = p
	}
	if err != nil {
		return "", err
	}
	code, err := l.awaitCode(ctx, l.flow)
	if err != nil {
		return "", err
	}
	l.code = code
	return why + "; the waiting page returned a code with the request's state and iss", nil
}

// tokenCheck: the code exchange, with PKCE.
func (l *live) tokenCheck(ctx context.Context) (string, error) {
	wrong, err := l.exchange(ctx, l.flow, l.code, random())
	if err != nil {
		return "", err
	}
	if wrong.status != http.StatusBadRequest || wrong.errCode != "invalid_grant" {
		return "", fmt.Errorf("a wrong code_verifier was answered %d %s, want 400 invalid_grant: PKCE is not enforced", wrong.status, wrong.errCode)
	}
	rep, err := l.exchange(ctx, l.flow, l.code, l.flow.verifier)
	if err != nil {
		return "", err
	}
	t, err := rep.issued("the code exchange")
	if err != nil {
		return "", err
	}
	l.tok = t
	l.cleanup[t.refresh] = l.first
	return fmt.Sprintf("a wrong code_verifier is refused (invalid_grant); the right one gets a Bearer pair (expires in %.0f s, no-store)", t.expiresIn), nil
}

// toolsCheck: the list, in both protocol eras.
func (l *live) toolsCheck(ctx context.Context) (string, error) {
	c := l.mcp(l.tok.access, false)
	init, err := c.call(ctx, "initialize", map[string]any{"protocolVersion": handshakeVersion, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "tabrelay-live-check", "version": "1"}})
	if err != nil {
		return "", err
	}
	if init.result == nil {
		return "", fmt.Errorf("initialize: %s", init.errorWords())
	}
	c.version, _ = init.result["protocolVersion"].(string)
	if _, err := c.call(ctx, "notifications/initialized", nil); err != nil {
		return "", err
	}
	handshake, err := l.list(ctx, c)
	if err != nil {
		return "", err
	}
	modern, err := l.list(ctx, l.mcp(l.tok.access, true))
	if err != nil {
		return "", fmt.Errorf("in the %s era: %w", modernVersion, err)
	}
	switch {
	case len(handshake) == 0:
		return "", errors.New("tools/list answered no tools: the connection may use none (its scope), or the bundle has none")
	case !slices.Equal(names(handshake), names(modern)):
		return "", fmt.Errorf("tools/list differs between the eras: %v and %v", names(handshake), names(modern))
	}
	l.tools = handshake
	return fmt.Sprintf("initialize (%s), then tools/list in both eras (%s, %s): %d tools (%s)",
		c.version, handshakeVersion, modernVersion, len(handshake), clip(strings.Join(names(handshake), ", "), 120)), nil
}

// list is tools/list of c.
func (l *live) list(ctx context.Context, c *mcpClient) ([]tool, error) {
	a, err := c.call(ctx, "tools/list", nil)
	if err != nil {
		return nil, err
	}
	if a.result == nil {
		return nil, fmt.Errorf("tools/list: %s", a.errorWords())
	}
	if c.modern && a.result["resultType"] != "complete" {
		return nil, fmt.Errorf("tools/list: resultType %v, want complete", a.result["resultType"])
	}
	return toolsOf(a.result)
}

// pick is the tool the live check calls: --tool, or the first read-only
// tool that requires no argument, one that runs without asking the person
// first.
func (l *live) pick() (tool, error) {
	if l.opts.Tool != "" {
		for _, t := range l.tools {
			if t.Name == l.opts.Tool {
				return t, nil
			}
		}
		return tool{}, fmt.Errorf("--tool %s is not in the connection's tool list", l.opts.Tool)
	}
	var fallback []tool
	for _, t := range l.tools {
		if t.readOnlyNoArgs() && t.runsWithoutAsking() {
			return t, nil
		}
		if t.readOnlyNoArgs() {
			fallback = append(fallback, t)
		}
	}
	if len(fallback) > 0 {
		return fallback[0], nil
	}
	return tool{}, errors.New("no listed tool is read-only with no required arguments: name one with --tool (and --args)")
}

// callOnce is tools/call of t with the options' arguments, as a host that
// takes event streams sends it.
func (l *live) callOnce(ctx context.Context, t tool) (rpc, error) {
	args := map[string]any{}
	if err := json.Unmarshal(l.argsJSON(), &args); err != nil {
		return rpc{}, errors.New("--args is not a JSON object")
	}
	c := l.mcp(l.tok.access, false)
	c.version = handshakeVersion
	return c.call(ctx, "tools/call", map[string]any{"name": t.Name, "arguments": args})
}

// argsJSON is the call's arguments ({} unless --args).
func (l *live) argsJSON() json.RawMessage {
	if len(l.opts.Args) == 0 {
		return json.RawMessage("{}")
	}
	return l.opts.Args
}

// call: a tool call, answered by the page.
func (l *live) call(ctx context.Context) (string, error) {
	t, err := l.pick()
	if err != nil {
		return "", err
	}
	l.rep.debugf("calling %s (%d bytes of arguments, not shown)", t.Name, len(l.argsJSON()))
	start := time.Now()
	a, err := l.callOnce(ctx, t)
	if err != nil && ctx.Err() != nil {
		return "", fmt.Errorf("tools/call %s had no answer within %s: if the page asks the person first, nobody answers here (name another tool with --tool)", t.Name, since(start))
	}
	if err != nil {
		return "", err
	}
	if a.result == nil {
		return "", fmt.Errorf("tools/call %s: %s", t.Name, a.errorWords())
	}
	text, isErr := textOf(a.result)
	switch {
	case isErr:
		return "", fmt.Errorf("tools/call %s came back as an error: %q", t.Name, clip(text, 160))
	case !taggedData(text):
		return "", fmt.Errorf("tools/call %s was not answered with a tab's result (no data tags): %q", t.Name, clip(text, 160))
	}
	l.callTool = t
	return fmt.Sprintf("%s answered by the page in %s (its data in the data tags, %d characters)", t.Name, since(start), len(text)), nil
}

// viewCard: the MCP Apps resource a listed tool points at.
func (l *live) viewCard(ctx context.Context) (string, error) {
	var t tool
	for _, x := range l.tools {
		if x.viewCard() != "" {
			t = x
			break
		}
	}
	if t.Name == "" {
		return "", skipped{"no listed tool has a view card (_meta.ui.resourceUri)"}
	}
	uri := t.viewCard()
	a, err := l.mcp(l.tok.access, false).call(ctx, "resources/read", map[string]any{"uri": uri})
	if err != nil {
		return "", err
	}
	if a.result == nil {
		return "", fmt.Errorf("resources/read %s: %s", uri, a.errorWords())
	}
	contents, _ := a.result["contents"].([]any)
	first := map[string]any{}
	if len(contents) > 0 {
		first, _ = contents[0].(map[string]any)
	}
	mime, _ := first["mimeType"].(string)
	text, _ := first["text"].(string)
	blob, _ := first["blob"].(string)
	switch {
	case mime != "text/html;profile=mcp-app":
		return "", fmt.Errorf("resources/read %s answered %q, want text/html;profile=mcp-app", uri, mime)
	case text == "" && blob == "":
		return "", fmt.Errorf("resources/read %s answered an empty view card", uri)
	}
	return fmt.Sprintf("resources/read %s (of %s): %s, %d characters", uri, t.Name, mime, len(text)+len(blob)), nil
}

// idle: with the page closed, a call is answered in words, promptly.
func (l *live) idle(ctx context.Context) (string, error) {
	l.page.close()
	l.page = nil
	// The relay is given a moment to see the socket end: a call that
	// reaches a tab as it closes is another case (a call in flight when
	// its tab goes), which the relay held for its whole TAB_CALL_WAIT when
	// this check was written.
	select {
	case <-time.After(idleSettle):
	case <-ctx.Done():
		return "", ctx.Err()
	}
	start := time.Now()
	a, err := l.callOnce(ctx, l.callTool)
	took := time.Since(start)
	if err != nil && ctx.Err() != nil {
		return "", fmt.Errorf("with the page closed, a call of %s had no answer within %s: the relay holds a call for a tab that is gone instead of answering it (SPEC §3: nothing waits)",
			l.callTool.Name, since(start))
	}
	if err != nil {
		return "", err
	}
	if a.result == nil {
		return "", fmt.Errorf("with the page closed, tools/call %s: %s", l.callTool.Name, a.errorWords())
	}
	text, isErr := textOf(a.result)
	switch {
	case !isErr:
		return "", fmt.Errorf("with the page closed, a tab still answered %s: another tab of this browser?", l.callTool.Name)
	case took > promptly:
		return "", fmt.Errorf("with the page closed, a call was answered only after %s (want within %s): %q", since(start), promptly, clip(text, 100))
	}
	return fmt.Sprintf("with the page closed, a call was answered in words after %s: %q", since(start), clip(text, 100)), nil
}

// rotation: a refresh gives a new pair, and the new access token works.
func (l *live) rotation(ctx context.Context) (string, error) {
	next, err := l.rotate(ctx, l.tok.refresh, "the refresh")
	if err != nil {
		return "", err
	}
	if next.refresh == l.tok.refresh || next.access == l.tok.access {
		return "", errors.New("the refresh answered a token it had issued before: refresh tokens do not rotate")
	}
	tools, err := l.list(ctx, l.mcp(next.access, false))
	if err != nil {
		return "", fmt.Errorf("the new access token: %w", err)
	}
	l.rotated = next
	return fmt.Sprintf("the refresh gave a new pair; the new access token lists %d tools", len(tools)), nil
}

// rotate refreshes the first connection's refresh token (what names the
// step in errors) and returns the new pair, which is revoked at the end
// in its place.
func (l *live) rotate(ctx context.Context, refresh, what string) (tokens, error) {
	rep, err := l.refresh(ctx, l.first, refresh)
	if err != nil {
		return tokens{}, err
	}
	next, err := rep.issued(what)
	if err != nil {
		return tokens{}, err
	}
	delete(l.cleanup, refresh)
	l.cleanup[next.refresh] = l.first
	return next, nil
}

// reuse: the old refresh token, presented after its successor was used,
// is refused and ends the family (README: the grace rule).
func (l *live) reuse(ctx context.Context) (string, error) {
	newest, err := l.rotate(ctx, l.rotated.refresh, "the refresh with the successor")
	if err != nil {
		return "", err
	}
	old, err := l.refresh(ctx, l.first, l.tok.refresh)
	if err != nil {
		return "", err
	}
	if old.status != http.StatusBadRequest || old.errCode != "invalid_grant" {
		return "", fmt.Errorf("the first refresh token, presented after its successor was used, was answered %d %s, want 400 invalid_grant: no reuse detection", old.status, old.errCode)
	}
	a, err := l.mcp(newest.access, false).call(ctx, "tools/list", nil)
	if err != nil {
		return "", err
	}
	if a.status != http.StatusUnauthorized {
		return "", fmt.Errorf("after the reuse, the family's newest access token still gets %d, want 401: the family was not revoked", a.status)
	}
	delete(l.cleanup, newest.refresh)
	return fmt.Sprintf("the first refresh token, presented after its successor was used, is refused (%q); the family's newest access token now gets 401",
		clip(old.errDescription, 100)), nil
}

// originOf is the scheme and host of a URL, for lines (never its
// fragment, which carries the connect code).
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "the app"
	}
	return u.Scheme + "://" + u.Host
}
