package protocol

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestScopeRule is the scope rule's table (scope.go): what entries grant,
// the text form both ways, how scopes combine, the catalogue check, and
// the action words a store's index is asked for. The other packages' tests
// rely on it and test only that they ask here: a new wildcard form is a
// change to scope.go and to this table.
func TestScopeRule(t *testing.T) {
	b := ProbeBundle() // counter: get increment reset; notes: list add clear; whoami: no actions
	for _, c := range []struct {
		name     string
		scope    string // the text form, as ParseScopeText reads it
		tool     string
		action   string
		allows   bool
		listed   bool     // NamesTool
		narrowed []string // GrantedActions of tool, when it is the bundle's
	}{
		{"a named action", "counter:get,reset", "counter", "get", true, true, []string{"get", "reset"}},
		{"an action not named", "counter:get,reset", "counter", "increment", false, true, []string{"get", "reset"}},
		{"the bare tool grants every action", "counter", "counter", "increment", true, true, []string{"get", "increment", "reset"}},
		{"the wildcard grants every action", "counter:*", "counter", "reset", true, true, []string{"get", "increment", "reset"}},
		{"the wildcard among named actions", "counter:get,*", "counter", "reset", true, true, []string{"get", "increment", "reset"}},
		{"no action named: only the wildcard", "counter:get", "counter", "", false, true, []string{"get"}},
		{"no action named, wildcard", "counter", "counter", "", true, true, []string{"get", "increment", "reset"}},
		{"a tool without actions", "whoami", "whoami", "", true, true, nil},
		{"a tool without actions, named by action only", "whoami:get", "whoami", "", false, true, nil},
		{"another tool", "counter", "notes", "list", false, false, nil},
		{"the wildcard as a call's action", "counter:get", "counter", "*", false, true, []string{"get"}},
		{"nothing", "", "counter", "get", false, false, nil},
	} {
		t.Run("allows/"+c.name, func(t *testing.T) {
			entries, err := ParseScopeText(c.scope)
			if err != nil {
				t.Fatal(err)
			}
			if got := Allows(entries, c.tool, c.action); got != c.allows {
				t.Fatalf("Allows(%q, %s, %q) = %v", c.scope, c.tool, c.action, got)
			}
			if got := NamesTool(entries, c.tool); got != c.listed {
				t.Fatalf("NamesTool(%q, %s) = %v", c.scope, c.tool, got)
			}
			if tl, ok := b.Tool(c.tool); ok {
				var names []string
				for _, a := range GrantedActions(entries, tl) {
					names = append(names, a.Name)
				}
				if !slices.Equal(names, c.narrowed) {
					t.Fatalf("GrantedActions(%q, %s) = %v, want %v", c.scope, c.tool, names, c.narrowed)
				}
			}
			// A store answers "who may call" by the words ActionsGranting
			// names: an entry holding one of them is what Allows grants.
			if c.action != "" {
				words := ActionsGranting(c.action)
				indexed := slices.ContainsFunc(entries, func(e ScopeEntry) bool {
					return e.Tool == c.tool && slices.ContainsFunc(e.Actions, func(a string) bool { return slices.Contains(words, a) })
				})
				if indexed != c.allows {
					t.Fatalf("the index words %q find %v for %q, Allows says %v", words, indexed, c.scope, c.allows)
				}
			}
		})
	}

	for _, c := range []struct {
		name, text string
		want       []ScopeEntry // nil with err
		err        bool
		formatted  string
	}{
		{"a bare tool", "counter", []ScopeEntry{{"counter", []string{AllActions}}}, false, "counter"},
		{"actions, each once", "counter:get,get,reset", []ScopeEntry{{"counter", []string{"get", "reset"}}}, false, "counter:get,reset"},
		{"the wildcard is written as the bare tool", "counter:*", []ScopeEntry{{"counter", []string{AllActions}}}, false, "counter"},
		{"several words, any space", "\u00a0counter:get\twhoami\n", []ScopeEntry{{"counter", []string{"get"}}, {"whoami", []string{AllActions}}}, false, "counter:get whoami"},
		{"spaces around an action (a CLI argument)", "counter:get, reset", nil, true, ""},
		{"an empty action list", "counter:", nil, true, ""},
		{"an empty action", "counter:get,,reset", nil, true, ""},
		{"no tool", ":get", nil, true, ""},
		{"nothing", "", nil, false, ""},
	} {
		t.Run("text/"+c.name, func(t *testing.T) {
			got, err := ParseScopeText(c.text)
			if (err != nil) != c.err || (err != nil && !errors.Is(err, ErrScopeWord)) {
				t.Fatalf("ParseScopeText(%q): %v", c.text, err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("ParseScopeText(%q) = %v, want %v", c.text, got, c.want)
			}
			if f := FormatScopeText(got); f != c.formatted {
				t.Fatalf("FormatScopeText(%v) = %q, want %q", got, f, c.formatted)
			}
			for _, e := range got {
				if GrantsAll(e) != !strings.Contains(FormatScopeWord(e), ":") {
					t.Fatalf("GrantsAll(%v) = %v, but it is written %q", e, GrantsAll(e), FormatScopeWord(e))
				}
			}
		})
	}
	// One CLI argument is one word: the spaces in it are no separator.
	if e, err := ParseScopeWord(" counter : get, reset "); err != nil || !reflect.DeepEqual(e, ScopeEntry{"counter", []string{"get", "reset"}}) {
		t.Fatalf("ParseScopeWord with spaces = %v, %v", e, err)
	}

	for _, c := range []struct{ name, parent, child, intersect, widen string }{
		{"named actions", "counter:get,reset", "counter:reset,increment", "counter:reset", "counter:get,reset,increment"},
		{"the parent's wildcard keeps the child's", "counter", "counter:get", "counter:get", "counter"},
		{"the child's wildcard keeps the parent's", "counter:get", "counter:*", "counter:get", "counter"},
		{"nothing in common", "counter:get", "counter:reset notes", "", "counter:get,reset notes"},
		{"a tool only one names", "whoami", "notes:list", "", "whoami notes:list"},
	} {
		t.Run("combine/"+c.name, func(t *testing.T) {
			parent, _ := ParseScopeText(c.parent)
			child, _ := ParseScopeText(c.child)
			if got := FormatScopeText(Intersect(parent, child)); got != c.intersect {
				t.Fatalf("Intersect(%q, %q) = %q, want %q", c.parent, c.child, got, c.intersect)
			}
			before := FormatScopeText(parent)
			if got := FormatScopeText(Widen(parent, child)); got != c.widen {
				t.Fatalf("Widen(%q, %q) = %q, want %q", c.parent, c.child, got, c.widen)
			}
			if FormatScopeText(parent) != before {
				t.Fatalf("Widen changed the scope it widened: %q, was %q", FormatScopeText(parent), before)
			}
		})
	}

	for _, c := range []struct {
		name       string
		entries    []ScopeEntry
		mayBeEmpty bool
		want       string // the checked entries' text form, or the error's start
	}{
		{"no actions field: the whole tool", []ScopeEntry{{Tool: "counter"}}, false, "counter"},
		{"the wildcard", []ScopeEntry{{"counter", []string{AllActions}}}, false, "counter"},
		{"declared actions", []ScopeEntry{{"counter", []string{"get", "reset"}}}, false, "counter:get,reset"},
		{"an emptied list grants nothing", []ScopeEntry{{"counter", []string{}}}, true, "The tool <tabrelay-data>\"counter\"</tabrelay-data> is given no action"},
		{"an undeclared action", []ScopeEntry{{"counter", []string{"explode"}}}, true, "The tool <tabrelay-data>\"counter\"</tabrelay-data> has no action"},
		{"a tool twice", []ScopeEntry{{Tool: "counter"}, {Tool: "counter"}}, true, "The scope names the tool"},
		{"a tool the catalogue lacks", []ScopeEntry{{Tool: "nope"}}, true, "The scope names the tool"},
		{"an approval grants something", nil, false, "Choose at least one tool"},
		{"a change may grant nothing", nil, true, ""},
	} {
		t.Run("check/"+c.name, func(t *testing.T) {
			got, err := CheckScope(b, c.entries, c.mayBeEmpty)
			if err != nil {
				var rerr *RelayError
				if !errors.As(err, &rerr) || rerr.Code != ErrCodeInvalidScope || !strings.HasPrefix(rerr.Message, c.want) {
					t.Fatalf("CheckScope(%v): %v, want %q…", c.entries, err, c.want)
				}
				return
			}
			if f := FormatScopeText(got); f != c.want {
				t.Fatalf("CheckScope(%v) = %q, want %q", c.entries, f, c.want)
			}
		})
	}

	if !WellFormedScope([]ScopeEntry{{"counter", []string{"get"}}}) ||
		WellFormedScope([]ScopeEntry{{"counter", nil}}) || WellFormedScope([]ScopeEntry{{"", []string{AllActions}}}) {
		t.Fatal("WellFormedScope: an entry is well formed when it names a tool and an action")
	}
}

// FuzzScopeIntersect: a derived connection's scope never grants what its
// parent or its own entries do not (SPEC §8).
func FuzzScopeIntersect(f *testing.F) {
	f.Add("view_picture:* dataset:list,open", "dataset:* view_picture:open", "dataset", "open")
	f.Add("a:x,y a:*", "a:y b:*", "a", "")
	f.Add("", "a:*", "a", "*")
	f.Fuzz(func(t *testing.T, parentText, childText, tool, action string) {
		parent, perr := ParseScopeText(parentText)
		child, cerr := ParseScopeText(childText)
		if perr != nil || cerr != nil {
			return
		}
		got := Intersect(parent, child)
		for _, e := range got {
			for _, a := range append(e.Actions, "") {
				if Allows(got, e.Tool, a) && (!Allows(parent, e.Tool, a) || !Allows(child, e.Tool, a)) {
					t.Fatalf("Intersect(%v, %v) = %v grants %s/%s", parent, child, got, e.Tool, a)
				}
			}
		}
		if Allows(got, tool, action) && (!Allows(parent, tool, action) || !Allows(child, tool, action)) {
			t.Fatalf("Intersect(%v, %v) = %v grants %s/%s", parent, child, got, tool, action)
		}
		if Allows(parent, tool, action) && Allows(child, tool, action) && !Allows(got, tool, action) && action != "" {
			// Both grant it by name or by the wildcard: so must the intersection.
			t.Fatalf("Intersect(%v, %v) = %v refuses %s/%s both grant", parent, child, got, tool, action)
		}
		if again, err := ParseScopeText(FormatScopeText(got)); err != nil || Allows(again, tool, action) != Allows(got, tool, action) {
			t.Fatalf("%v written as %q reads as %v (%v)", got, FormatScopeText(got), again, err)
		}
	})
}
