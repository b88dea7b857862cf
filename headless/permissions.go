package headless

import "github.com/tabrelay/tabrelay/protocol"

// permissions is what this tab's "person" has set for tools: the probe app asks
// before clear_all (it deletes everything) and runs the rest; the
// conformance fixtures all run.
func (t *Tab) permissions(tools []string) map[string]string {
	out := make(map[string]string, len(tools))
	for _, name := range tools {
		if _, ok := t.bundle.Tool(name); !ok {
			continue
		}
		out[name] = protocol.PermissionRuns
		if name == "clear_all" {
			out[name] = protocol.PermissionAsks
		}
	}
	return out
}
