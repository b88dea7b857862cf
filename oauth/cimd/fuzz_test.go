package cimd

import (
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzDocument parses arbitrary client metadata documents: what it
// accepts holds to the rules (the fetched URL as client_id, a name fit to
// show, https or loopback redirect URIs, https links or none), and what it
// refuses is refused with a sentence that quotes nothing of the document.
func FuzzDocument(f *testing.F) {
	const id = "https://client.example/oauth/metadata.json"
	for _, seed := range []string{
		`{"client_id":"` + id + `","client_name":"Example","redirect_uris":["https://client.example/cb","http://127.0.0.1/cb"],"client_uri":"https://client.example","logo_uri":"http://client.example/logo.png"}`,
		`{"client_id":"` + id + `","client_name":"\u2603\u202e","redirect_uris":["https://a.example"]}`,
		`{"client_id":"` + id + `","CLIENT_NAME":"x","client_name":"y","redirect_uris":["javascript:\u2603"]}`,
		`{"client_id":"` + id + `","client_name":"x","redirect_uris":["https://a.example"],"token_endpoint_auth_method":"\u2603"}`,
		`{"client_id":"` + id + `","client_name":"x","redirect_uris":"https://a.example"}`,
		`{"client_id":"https://other.example/\u2603","client_name":"x","redirect_uris":["https://a.example"]}`,
		`null`, `[]`, `{}`, `{"client_id":` + strings.Repeat("[", 10000),
	} {
		f.Add([]byte(seed), id)
	}
	f.Fuzz(func(t *testing.T, body []byte, clientID string) {
		md, err := parse(body, clientID)
		if err != nil {
			reason := err.Error()
			if reason == "" || strings.Contains(reason, "\u2603") || strings.ContainsFunc(reason, unicode.IsControl) {
				t.Fatalf("refused with the reason %q", reason)
			}
			return
		}
		switch {
		case md.ClientID != clientID:
			t.Fatalf("client_id %q accepted from %q", md.ClientID, clientID)
		case md.ClientName == "" || md.ClientName != strings.TrimSpace(md.ClientName) ||
			utf8.RuneCountInString(md.ClientName) > MaxClientName || strings.ContainsFunc(md.ClientName, MisleadingRune):
			t.Fatalf("client_name %q accepted", md.ClientName)
		case len(md.RedirectURIs) == 0 || len(md.RedirectURIs) > maxRedirectURIs:
			t.Fatalf("%d redirect URIs accepted", len(md.RedirectURIs))
		}
		for _, u := range md.RedirectURIs {
			if !redirectHolds(u) {
				t.Fatalf("redirect URI %q accepted", u)
			}
		}
		for _, link := range []string{md.ClientURI, md.LogoURI} {
			if link != "" && httpsOrEmpty(link) != link {
				t.Fatalf("link %q accepted", link)
			}
		}
	})
}

// redirectHolds is the redirect rule, read on its own: an absolute https
// URL, or http on a loopback address (RFC 8252 §7.3), without a fragment or
// user info, at most MaxRedirectURI bytes.
func redirectHolds(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || len(raw) > MaxRedirectURI || u.Host == "" || u.User != nil || strings.Contains(raw, "#") {
		return false
	}
	return u.Scheme == "https" || u.Scheme == "http" && slices.Contains([]string{"127.0.0.1", "::1", "localhost"}, u.Hostname())
}
