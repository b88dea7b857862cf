package oauth

import (
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/tabrelay/tabrelay/protocol"
)

// FuzzCIMDDocument parses arbitrary client metadata documents: what it
// accepts holds to the rules (the fetched URL as client_id, a name fit to
// show, https or loopback redirect URIs, https links or none), and what it
// refuses is refused with a sentence that quotes nothing of the document.
func FuzzCIMDDocument(f *testing.F) {
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
		md, err := cimdParse(body, clientID)
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
			utf8.RuneCountInString(md.ClientName) > cimdMaxNameRunes || strings.ContainsFunc(md.ClientName, misleadingRune):
			t.Fatalf("client_name %q accepted", md.ClientName)
		case len(md.RedirectURIs) == 0 || len(md.RedirectURIs) > cimdMaxRedirectURIs:
			t.Fatalf("%d redirect URIs accepted", len(md.RedirectURIs))
		}
		for _, u := range md.RedirectURIs {
			if problem := cimdRedirectProblem(u); problem != "" || checkRedirectURI(u) != "" && !strings.HasPrefix(u, "http://localhost") {
				t.Fatalf("redirect URI %q accepted", u)
			}
		}
		for _, link := range []string{md.ClientURI, md.LogoURI} {
			if link != "" && cimdHTTPSOrEmpty(link) != link {
				t.Fatalf("link %q accepted", link)
			}
		}
	})
}

// FuzzScopeParam reads arbitrary scope parameters in the relay's words:
// what parseScopeParam accepts names only the catalogue's tools and actions,
// each tool once, and formatScope writes it back in words that read as the
// same entries; requestedScope keeps at most maxRequestedWords entries of
// the catalogue, each tool once, whatever the words.
func FuzzScopeParam(f *testing.F) {
	for _, seed := range []string{
		"counter", "counter:get,get,reset dataset:list", "openid offline_access counter:*", "counter:", ":get",
		"counter:get counter:reset", "view_picture dataset:list,open,nope", strings.Repeat("counter:get ", 70), "\u00a0counter\tdataset\n",
	} {
		f.Add(seed)
	}
	s := &Server{cfg: Config{Bundle: protocol.ProbeBundle()}}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, entries := range [][]protocol.ScopeEntry{s.requestedScope(raw), mustParse(s, raw)} {
			if len(entries) > maxRequestedWords && len(entries) > len(strings.Fields(raw)) {
				t.Fatalf("%d entries from %d words", len(entries), len(strings.Fields(raw)))
			}
			if _, err := s.checkEntries(entries, true); err != nil {
				t.Fatalf("entries %v of %q are not the catalogue's: %v", entries, raw, err)
			}
		}
		if n := len(s.requestedScope(raw)); n > maxRequestedWords {
			t.Fatalf("requestedScope kept %d entries", n)
		}
		entries, err := s.parseScopeParam(raw)
		if err != nil {
			if ge, ok := err.(*grantError); !ok || ge.code != "invalid_scope" || strings.Contains(ge.desc, `"`) {
				t.Fatalf("parseScopeParam(%q): %v", raw, err)
			}
			return
		}
		again, err := s.parseScopeParam(formatScope(entries))
		if err != nil || !reflect.DeepEqual(normalized(again), normalized(entries)) {
			t.Fatalf("%q read as %v, written as %q, read again as %v (%v)", raw, entries, formatScope(entries), again, err)
		}
	})
}

func mustParse(s *Server, raw string) []protocol.ScopeEntry {
	entries, _ := s.parseScopeParam(raw)
	return entries
}

// normalized writes a tool granted with "*" among other actions as "*"
// alone: formatScope writes both as the tool's bare name.
func normalized(entries []protocol.ScopeEntry) []protocol.ScopeEntry {
	out := make([]protocol.ScopeEntry, 0, len(entries))
	for _, e := range entries {
		for _, a := range e.Actions {
			if a == "*" {
				e.Actions = []string{"*"}
				break
			}
		}
		out = append(out, e)
	}
	return out
}
