package storetest

import (
	"errors"
	"slices"
	"testing"

	"github.com/tabrelay/tabrelay/oauth"
	"github.com/tabrelay/tabrelay/protocol"
)

func scopeOf(entries ...protocol.ScopeEntry) oauth.Scope {
	return oauth.Scope{Version: oauth.ScopeVersion, Entries: entries, UpdatedAt: now, UpdatedBy: "tab"}
}

func entry(tool string, actions ...string) protocol.ScopeEntry {
	return protocol.ScopeEntry{Tool: tool, Actions: actions}
}

// testScopeIndex: the reverse index answers "who may call X (action Y)"
// and stays right through set, only, clear and forget (which write the
// record anew).
func testScopeIndex(t *testing.T, s oauth.Store) {
	if _, err := s.ScopeRecord(ctx, "conn-a"); !errors.Is(err, oauth.ErrNotFound) {
		t.Fatalf("no record: %v", err)
	}
	put := func(conn string, sc oauth.Scope) {
		t.Helper()
		if err := s.PutScope(ctx, conn, sc); err != nil {
			t.Fatal(err)
		}
	}
	who := func(tool, action string, want ...string) {
		t.Helper()
		got, err := s.ScopeHolders(ctx, tool, action)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 && len(want) == 0 {
			return
		}
		if !slices.Equal(got, want) {
			t.Fatalf("who %s %s = %v, want %v", tool, action, got, want)
		}
	}
	put("conn-a", scopeOf(entry("counter", "get", "increment"), entry("whoami", "*")))
	put("conn-b", scopeOf(entry("counter", "*")))
	raw, err := s.ScopeRecord(ctx, "conn-a")
	if sc, perr := oauth.ParseScope(raw); err != nil || perr != nil || len(sc.Entries) != 2 {
		t.Fatalf("record %s: %v %v", raw, err, perr)
	}
	who("counter", "", "conn-a", "conn-b")
	who("counter", "get", "conn-a", "conn-b")
	who("counter", "reset", "conn-b")
	who("whoami", "anything", "conn-a")
	who("notes", "")

	put("conn-a", scopeOf(entry("notes", "add"))) // only: replaces
	who("counter", "get", "conn-b")
	who("whoami", "")
	who("notes", "add", "conn-a")

	put("conn-a", scopeOf(entry("notes", "add"), entry("counter", "get"))) // set: widens
	who("counter", "get", "conn-a", "conn-b")

	put("conn-b", scopeOf()) // clear, and forget writes this too
	who("counter", "reset")
	who("counter", "", "conn-a")
}
