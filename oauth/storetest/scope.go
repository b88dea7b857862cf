package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
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

// testScopeIndex: the reverse index answers "whose entries for X name one
// of these action words" (who may call X's action Y is the words
// protocol.ActionsGranting names, whose rule its own table test holds) and
// stays right through set, only, clear and forget (which write the record
// anew).
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
		got, err := s.ScopeHolders(ctx, tool, protocol.ActionsGranting(action))
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
	// The store matches the words it is given, "*" as any other.
	if got, err := s.ScopeHolders(ctx, "counter", []string{"get"}); err != nil || !slices.Equal(got, []string{"conn-a"}) {
		t.Fatalf(`holders of counter's word "get" = %v (%v), want [conn-a]`, got, err)
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

// testScopeAtomic: every UpdateScope reads what the one before it wrote,
// as two adds on two nodes must; the index follows the last record.
func testScopeAtomic(t *testing.T, s oauth.Store) {
	var n atomic.Int64
	race(t, func() error {
		tool := fmt.Sprintf("tool%02d", n.Add(1))
		_, err := s.UpdateScope(ctx, "conn-a", func(cur []byte) (oauth.Scope, error) {
			sc := oauth.Scope{Version: oauth.ScopeVersion}
			if cur != nil {
				var err error
				if sc, err = oauth.ParseScope(cur); err != nil {
					return oauth.Scope{}, err
				}
			}
			sc.Entries = append(sc.Entries, protocol.ScopeEntry{Tool: tool, Actions: []string{"*"}})
			return sc, nil
		})
		return err
	})
	raw, err := s.ScopeRecord(ctx, "conn-a")
	must(t, err)
	sc, err := oauth.ParseScope(raw)
	must(t, err)
	if len(sc.Entries) != racers {
		t.Fatalf("%d concurrent adds left %d entries: updates were lost", racers, len(sc.Entries))
	}
	for i := 1; i <= racers; i++ {
		holders, err := s.ScopeHolders(ctx, fmt.Sprintf("tool%02d", i), nil)
		must(t, err)
		if len(holders) != 1 || holders[0] != "conn-a" {
			t.Fatalf("the index names %v for tool%02d, want conn-a", holders, i)
		}
	}
	errNo := errors.New("no")
	if _, err := s.UpdateScope(ctx, "conn-a", func([]byte) (oauth.Scope, error) { return oauth.Scope{}, errNo }); !errors.Is(err, errNo) {
		t.Fatalf("fn's error came back as %v", err)
	}
	if raw2, _ := s.ScopeRecord(ctx, "conn-a"); string(raw2) != string(raw) {
		t.Fatal("an update whose fn failed wrote something")
	}
}
