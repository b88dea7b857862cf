package mcp

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/tabrelay/tabrelay/protocol"
)

// grantedNote says which actions this connection may use, so that a
// description written for every action does not offer the others. It
// names only the granted ones: their names and descriptions are the
// catalogue's own, not written by others.
func grantedNote(actions []protocol.Action) string {
	parts := make([]string, len(actions))
	for i, a := range actions {
		parts[i] = "`" + a.Name + "`"
		if a.Description != "" {
			parts[i] += " (" + strings.TrimSuffix(a.Description, ".") + ")"
		}
	}
	return "This connection may use only these actions: " + strings.Join(parts, ", ") +
		". The person has not granted it the others; calling them is refused."
}

// narrowedSchema returns schema with its action property held to actions:
// an enum that lists only them (the declared enum's order kept, or the
// actions' order when it declared none, or a const). A schema it cannot
// read is returned as it is: the refusal at tools/call is the control.
func narrowedSchema(schema json.RawMessage, actions []protocol.Action) json.RawMessage {
	var root map[string]json.RawMessage
	if json.Unmarshal(schema, &root) != nil {
		return schema
	}
	var props map[string]json.RawMessage
	if json.Unmarshal(root["properties"], &props) != nil {
		return schema
	}
	var action map[string]json.RawMessage
	if json.Unmarshal(props["action"], &action) != nil || action == nil {
		return schema
	}
	names := make([]string, len(actions))
	for i, a := range actions {
		names[i] = a.Name
	}
	var declared []string
	if json.Unmarshal(action["enum"], &declared) == nil && len(declared) > 0 {
		declared = slices.DeleteFunc(declared, func(n string) bool { return !slices.Contains(names, n) })
		if len(declared) > 0 {
			names = declared
		}
	}
	delete(action, "const")
	action["enum"], _ = json.Marshal(names)
	props["action"], _ = json.Marshal(action)
	root["properties"], _ = json.Marshal(props)
	out, err := json.Marshal(root)
	if err != nil {
		return schema
	}
	return out
}
