package protocol

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The scope rule (SPEC §8), all of it in this file: what a connection's
// entries grant, how two scopes combine, the text form hosts and the CLI
// write, and the catalogue check. Every other package asks here: the
// guard and tools/list (Allows, NamesTool, GrantedActions), the
// authorization server (CheckScope, Widen, Intersect, the text form), and
// the stores, which only store and index the entries they are given and
// look up the action words ActionsGranting names. A new wildcard form is a
// change to this file and its table test (scope_test.go).

// AllActions is the action word that grants every action of a tool, the
// ones the catalogue adds later too; a tool without actions is granted only
// by it.
const AllActions = "*"

// GrantsAll reports whether e grants every action of its tool, the ones
// the catalogue adds later too.
func GrantsAll(e ScopeEntry) bool { return slices.Contains(e.Actions, AllActions) }

// Allows reports whether entries grant tool, and of it action ("" when the
// tool has no actions, or the call names none: then only AllActions grants
// it).
func Allows(entries []ScopeEntry, tool, action string) bool {
	for _, e := range entries {
		if e.Tool != tool {
			continue
		}
		for _, a := range e.Actions {
			if a == AllActions || (action != "" && a == action) {
				return true
			}
		}
	}
	return false
}

// NamesTool reports whether entries have an entry for tool, whatever its
// actions: such a tool is listed to the connection.
func NamesTool(entries []ScopeEntry, tool string) bool {
	return slices.ContainsFunc(entries, func(e ScopeEntry) bool { return e.Tool == tool })
}

// GrantedActions narrows t's actions to those entries grant, in t's
// order: what tools/list offers the connection of them.
func GrantedActions(entries []ScopeEntry, t *Tool) []Action {
	var out []Action
	for _, a := range t.Actions {
		if Allows(entries, t.Name, a.Name) {
			out = append(out, a)
		}
	}
	return out
}

// ActionsGranting is the action words of which a stored entry for a tool
// grants action: the action itself and AllActions. For "" it is nil, which
// the stores' ScopeHolders read as "any entry for the tool".
func ActionsGranting(action string) []string {
	if action == "" {
		return nil
	}
	if action == AllActions {
		return []string{AllActions}
	}
	return []string{action, AllActions}
}

// Intersect is what both scopes grant: a derived connection never gets
// more than its parent (SPEC §8).
func Intersect(parent, child []ScopeEntry) []ScopeEntry {
	var out []ScopeEntry
	for _, c := range child {
		for _, p := range parent {
			if p.Tool != c.Tool {
				continue
			}
			var actions []string
			switch {
			case GrantsAll(p):
				actions = slices.Clone(c.Actions)
			case GrantsAll(c):
				actions = slices.Clone(p.Actions)
			default:
				for _, a := range c.Actions {
					if slices.Contains(p.Actions, a) {
						actions = append(actions, a)
					}
				}
			}
			if len(actions) > 0 {
				out = append(out, ScopeEntry{Tool: c.Tool, Actions: actions})
			}
		}
	}
	return out
}

// Widen adds more to have, as `tabrelay scope set` and the admin API's
// POST do: a tool's actions are joined, and AllActions wins.
func Widen(have, more []ScopeEntry) []ScopeEntry {
	out := slices.Clone(have)
	for _, m := range more {
		i := slices.IndexFunc(out, func(e ScopeEntry) bool { return e.Tool == m.Tool })
		if i < 0 {
			out = append(out, m)
			continue
		}
		if GrantsAll(out[i]) || GrantsAll(m) {
			out[i].Actions = []string{AllActions}
			continue
		}
		actions := slices.Clone(out[i].Actions)
		for _, a := range m.Actions {
			if !slices.Contains(actions, a) {
				actions = append(actions, a)
			}
		}
		out[i].Actions = actions
	}
	return out
}

// ErrScopeWord says a word of the scope's text form is neither TOOL nor
// TOOL:ACTION,ACTION.
var ErrScopeWord = errors.New("a scope entry is TOOL (every action) or TOOL:ACTION,ACTION")

// ParseScopeWord reads one entry of the text form: "tool" grants every
// action of the tool (AllActions), "tool:a,b" those actions, each kept
// once. Spaces around the tool and each action are dropped (a CLI
// argument may hold "counter:get, reset"); an empty tool or action is an
// error, never "every action".
func ParseScopeWord(word string) (ScopeEntry, error) {
	tool, actions, hasActions := strings.Cut(word, ":")
	e := ScopeEntry{Tool: strings.TrimSpace(tool), Actions: []string{AllActions}}
	if e.Tool == "" {
		return ScopeEntry{}, fmt.Errorf("%w: it names no tool", ErrScopeWord)
	}
	if !hasActions {
		return e, nil
	}
	e.Actions = nil
	for a := range strings.SplitSeq(actions, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			return ScopeEntry{}, fmt.Errorf("%w: it names an empty action", ErrScopeWord)
		}
		// Each action once: a word repeating one would be stored as long
		// as it is (a connect request, a derived connection).
		if !slices.Contains(e.Actions, a) {
			e.Actions = append(e.Actions, a)
		}
	}
	return e, nil
}

// ParseScopeText reads the text form of a scope: space-separated words
// ParseScopeWord reads (an OAuth scope parameter in the relay's words).
func ParseScopeText(text string) ([]ScopeEntry, error) {
	var out []ScopeEntry
	for word := range strings.FieldsSeq(text) {
		e, err := ParseScopeWord(word)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// FormatScopeWord writes e in the words ParseScopeWord reads: the tool
// alone when it grants every action.
func FormatScopeWord(e ScopeEntry) string {
	if GrantsAll(e) {
		return e.Tool
	}
	return e.Tool + ":" + strings.Join(e.Actions, ",")
}

// FormatScopeText writes entries in the words ParseScopeText reads.
func FormatScopeText(entries []ScopeEntry) string {
	words := make([]string, len(entries))
	for i, e := range entries {
		words[i] = FormatScopeWord(e)
	}
	return strings.Join(words, " ")
}

// CheckScope holds a chosen scope to b's catalogue (SPEC §8): each tool
// once and the catalogue's, each action one the tool declares or
// AllActions. An entry without an actions field (nil) grants the whole
// tool; an emptied list grants nothing and is refused. An approval must
// grant something (mayBeEmpty false); a later change may grant nothing.
// The sentences quote the names as b's data tags mark them.
func CheckScope(b *Bundle, entries []ScopeEntry, mayBeEmpty bool) ([]ScopeEntry, error) {
	if len(entries) == 0 && !mayBeEmpty {
		return nil, scopeError("Choose at least one tool this connection may use.")
	}
	tag := b.Tag()
	seen := map[string]bool{}
	out := make([]ScopeEntry, 0, len(entries))
	for _, e := range entries {
		t, ok := b.Tool(e.Tool)
		if !ok || seen[e.Tool] {
			return nil, scopeError(fmt.Sprintf("The scope names the tool %s twice or the catalogue has no such tool.", QuoteName(tag, e.Tool)))
		}
		seen[e.Tool] = true
		actions := e.Actions
		switch {
		case actions == nil: // no actions field: the whole tool
			actions = []string{AllActions}
		case len(actions) == 0: // a list the person emptied grants nothing, not everything
			return nil, scopeError(fmt.Sprintf("The tool %s is given no action: leave it out, or choose actions.", QuoteName(tag, e.Tool)))
		}
		for _, a := range actions {
			if a != AllActions && !t.HasAction(a) {
				return nil, scopeError(fmt.Sprintf("The tool %s has no action %s.", QuoteName(tag, e.Tool), QuoteName(tag, a)))
			}
		}
		out = append(out, ScopeEntry{Tool: e.Tool, Actions: actions})
	}
	return out, nil
}

// WellFormedScope reports whether every entry names a tool and at least one
// action: a stored record whose entries are not is not understood, and
// grants nothing.
func WellFormedScope(entries []ScopeEntry) bool {
	return !slices.ContainsFunc(entries, func(e ScopeEntry) bool { return e.Tool == "" || len(e.Actions) == 0 })
}

func scopeError(msg string) error { return ErrInvalidScope.With(msg) }
