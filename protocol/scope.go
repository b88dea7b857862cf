package protocol

import "slices"

// Allows reports whether entries grant tool, and of it action ("" when the
// tool has no actions, or the call names none: then only "*" grants it).
func Allows(entries []ScopeEntry, tool, action string) bool {
	for _, e := range entries {
		if e.Tool != tool {
			continue
		}
		for _, a := range e.Actions {
			if a == "*" || (action != "" && a == action) {
				return true
			}
		}
	}
	return false
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
			case slices.Contains(p.Actions, "*"):
				actions = slices.Clone(c.Actions)
			case slices.Contains(c.Actions, "*"):
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

// NamesTool reports whether entries have an entry for tool, whatever its
// actions: such a tool is listed to the connection.
func NamesTool(entries []ScopeEntry, tool string) bool {
	for _, e := range entries {
		if e.Tool == tool {
			return true
		}
	}
	return false
}
