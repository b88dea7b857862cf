package cimd

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A document and its rules: what it must say, and what of it the relay
// keeps.

// Metadata is what a client metadata document (or a DCR registration) says of a client.
type Metadata struct {
	ClientID                string   `json:"client_id"`
	ClientName              string   `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	ClientURI               string   `json:"client_uri,omitempty"`
	LogoURI                 string   `json:"logo_uri,omitempty"`
	GrantTypes              []string `json:"grant_types,omitempty"`
	ResponseTypes           []string `json:"response_types,omitempty"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method,omitempty"`
}

// MaxRedirectURI bounds a redirect URI in bytes: a document's, a
// registration's, an authorization request's.
const MaxRedirectURI = 2 << 10

// MaxClientName bounds a client's name in characters, for a registration
// and a metadata document alike: it is shown to the person in a line of
// the Connect panel, the waiting page and the Connections panel, where a
// long one hides what follows (a real client's name is a few words).
const MaxClientName = 64

// MisleadingRune is a character a client's name to show holds none of: a
// control character, a line or paragraph separator, or a format character
// (Unicode category Cf: zero-width spaces and joiners such as U+200B,
// bidirectional overrides that make a name read as another, soft hyphens).
func MisleadingRune(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// NameProblem says what is wrong with a client's name (trimmed), or "":
// empty, longer than MaxClientName, or holding a MisleadingRune.
func NameProblem(name string) string {
	switch {
	case name == "":
		return "is missing: the person is shown who asks"
	case utf8.RuneCountInString(name) > MaxClientName:
		return fmt.Sprintf("is longer than %d characters", MaxClientName)
	case strings.ContainsFunc(name, MisleadingRune):
		return "contains control or invisible formatting characters (such as U+200B or a direction override): it is what the person is shown"
	}
	return ""
}

// IsClientID reports whether clientID is a URL a client metadata
// document may have: https, a host, a path other than "/" without dot
// segments, no fragment, no user info (draft-ietf-oauth-client-id-metadata-document §3).
func IsClientID(clientID string) bool {
	if len(clientID) > MaxURLLen || !strings.HasPrefix(clientID, "https://") ||
		strings.ContainsAny(clientID, "#\\") ||
		strings.ContainsFunc(clientID, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return false
	}
	u, err := url.Parse(clientID)
	if err != nil || u.Opaque != "" || u.User != nil || u.Hostname() == "" ||
		u.Path == "" || u.Path == "/" {
		return false
	}
	for _, p := range []string{u.Path, u.EscapedPath()} {
		for seg := range strings.SplitSeq(p, "/") {
			if seg == "." || seg == ".." {
				return false
			}
		}
	}
	return true
}

// parse decodes and checks a document fetched from clientID. Keys are
// matched exactly (encoding/json alone would match them case-insensitively).
func parse(body []byte, clientID string) (Metadata, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		return Metadata{}, invalidErr(err, "it is not a JSON object")
	}
	var md Metadata
	fields := []struct {
		name string
		dst  any
	}{
		{"client_id", &md.ClientID}, {"client_name", &md.ClientName},
		{"redirect_uris", &md.RedirectURIs}, {"client_uri", &md.ClientURI},
		{"logo_uri", &md.LogoURI}, {"grant_types", &md.GrantTypes},
		{"response_types", &md.ResponseTypes},
		{"token_endpoint_auth_method", &md.TokenEndpointAuthMethod},
	}
	for _, fd := range fields {
		if v, ok := raw[fd.name]; ok {
			if err := json.Unmarshal(v, fd.dst); err != nil {
				return Metadata{}, invalidErr(err, "its %s field has the wrong type", fd.name)
			}
		}
	}
	if md.ClientID != clientID {
		return Metadata{}, invalidErr(nil, "its client_id is not the URL it was fetched from")
	}
	for _, check := range []func(*Metadata) error{checkName, checkRedirectURIs, checkAuthMethod} {
		if err := check(&md); err != nil {
			return Metadata{}, err
		}
	}
	// Shown on the consent page as links or images: https only.
	md.ClientURI = httpsOrEmpty(md.ClientURI)
	md.LogoURI = httpsOrEmpty(md.LogoURI)
	return md, nil
}

// checkName trims client_name and requires a short one without control
// characters or the bidirectional overrides that make a name read as
// another: it is what the person is shown.
func checkName(md *Metadata) error {
	md.ClientName = strings.TrimSpace(md.ClientName)
	if p := NameProblem(md.ClientName); p != "" {
		return invalidErr(nil, "its client_name %s", p)
	}
	return nil
}

// checkRedirectURIs requires one to twenty https or http loopback URIs
// (reference/mcp.md: "Redirect URIs: https or loopback").
func checkRedirectURIs(md *Metadata) error {
	uris := md.RedirectURIs
	if len(uris) == 0 {
		return invalidErr(nil, "it lists no redirect_uris")
	}
	if len(uris) > maxRedirectURIs {
		return invalidErr(nil, "it lists more than %d redirect_uris", maxRedirectURIs)
	}
	for i, raw := range uris {
		if problem := redirectProblem(raw); problem != "" {
			return invalidErr(nil, "its redirect URI number %d %s", i+1, problem)
		}
	}
	return nil
}

// redirectProblem says what is wrong with one redirect URI, or "". It
// names only schemes from a fixed list, never the URI itself.
func redirectProblem(raw string) string {
	if len(raw) > MaxRedirectURI {
		return fmt.Sprintf("is longer than %d bytes", MaxRedirectURI)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "is not a valid URL"
	}
	switch u.Scheme {
	case "javascript", "data", "file", "vbscript":
		return "uses the " + u.Scheme + ": scheme, which is never allowed"
	}
	switch {
	case !u.IsAbs() || u.Opaque != "" || u.Host == "":
		return "is not an absolute URL"
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return "has a fragment"
	case u.User != nil:
		return "carries a user name or password"
	case u.Scheme == "https":
		return ""
	case u.Scheme == "http" && slices.Contains([]string{"127.0.0.1", "::1", "localhost"}, u.Hostname()):
		return "" // loopback, RFC 8252 §7.3
	}
	return "is neither https nor http on a loopback address"
}

// checkAuthMethod admits public clients only. It names the method only
// when it is one of the registered ones, never arbitrary document text.
func checkAuthMethod(md *Metadata) error {
	switch m := md.TokenEndpointAuthMethod; m {
	case "", "none":
		return nil
	case "client_secret_basic", "client_secret_post", "client_secret_jwt",
		"private_key_jwt", "tls_client_auth", "self_signed_tls_client_auth":
		return invalidErr(nil, "it asks for token endpoint authentication %q, %s", m, publicOnly)
	}
	return invalidErr(nil, "it asks for an unknown token endpoint authentication method, %s", publicOnly)
}

func httpsOrEmpty(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Scheme == "https" && u.Host != "" && u.User == nil {
		return raw
	}
	return ""
}

func clone(md Metadata) Metadata {
	md.RedirectURIs, md.GrantTypes = slices.Clone(md.RedirectURIs), slices.Clone(md.GrantTypes)
	md.ResponseTypes = slices.Clone(md.ResponseTypes)
	return md
}
