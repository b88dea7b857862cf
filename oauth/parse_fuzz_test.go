package oauth

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tabrelay/tabrelay/protocol"
)

// FuzzScopeParam reads arbitrary scope parameters in the relay's words:
// what parseScopeParam accepts names only the catalogue's tools and actions,
// each tool once, and protocol.FormatScopeText writes it back in words that read as the
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
			if _, err := protocol.CheckScope(s.cfg.Bundle, entries, true); err != nil {
				t.Fatalf("entries %v of %q are not the catalogue's: %v", entries, raw, err)
			}
		}
		if n := len(s.requestedScope(raw)); n > maxRequestedWords {
			t.Fatalf("requestedScope kept %d entries", n)
		}
		entries, err := s.parseScopeParam(raw)
		if err != nil {
			if ge, ok := err.(*protocol.RelayError); !ok || ge.OAuth != "invalid_scope" || strings.Contains(ge.Message, `"`) {
				t.Fatalf("parseScopeParam(%q): %v", raw, err)
			}
			return
		}
		again, err := s.parseScopeParam(protocol.FormatScopeText(entries))
		if err != nil || !reflect.DeepEqual(normalized(again), normalized(entries)) {
			t.Fatalf("%q read as %v, written as %q, read again as %v (%v)", raw, entries, protocol.FormatScopeText(entries), again, err)
		}
	})
}

func mustParse(s *Server, raw string) []protocol.ScopeEntry {
	entries, _ := s.parseScopeParam(raw)
	return entries
}

// normalized writes a tool granted with "*" among other actions as "*"
// alone: protocol.FormatScopeText writes both as the tool's bare name.
func normalized(entries []protocol.ScopeEntry) []protocol.ScopeEntry {
	out := make([]protocol.ScopeEntry, 0, len(entries))
	for _, e := range entries {
		for _, a := range e.Actions {
			if a == protocol.AllActions {
				e.Actions = []string{protocol.AllActions}
				break
			}
		}
		out = append(out, e)
	}
	return out
}
