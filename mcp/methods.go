package mcp

import (
	"encoding/json"
	"net/http"
	"slices"

	"github.com/tabrelay/tabrelay/protocol"
)

// listTTL is how long a host may keep a list (modern era: ttlMs). Lists
// depend on the token, so they are private to it.
const listTTL = 60_000

// handle serves one request of grant.
func (s *Server) handle(w http.ResponseWriter, r *http.Request, req *request, grant protocol.Grant) {
	e, rerr := eraOf(r, req)
	if rerr != nil {
		writeError(w, req.ID, rerr)
		return
	}
	switch req.Method {
	case "initialize":
		if e.modern {
			s.notFound(w, req, e) // the stateless era has no handshake
			return
		}
		s.initialize(w, req)
	case "ping":
		if e.modern {
			s.notFound(w, req, e)
			return
		}
		writeResult(w, req.ID, map[string]any{})
	case "server/discover":
		writeResult(w, req.ID, s.finish(e, s.discover(e), true))
	case "tools/list":
		writeResult(w, req.ID, s.finish(e, map[string]any{"tools": s.toolList(r, grant)}, true))
	case "tools/call":
		s.callTool(w, r, req, e, grant)
	case "resources/list":
		writeResult(w, req.ID, s.finish(e, map[string]any{"resources": s.resources()}, true))
	case "resources/templates/list":
		writeResult(w, req.ID, s.finish(e, map[string]any{"resourceTemplates": s.templates()}, true))
	case "resources/read":
		s.readResource(w, req, e)
	case "prompts/list":
		writeResult(w, req.ID, s.finish(e, map[string]any{"prompts": s.prompts()}, true))
	case "prompts/get":
		s.getPrompt(w, req, e)
	case "completion/complete":
		// Nothing of the relay's takes completions (it has no prompts and
		// no resource templates): the answer is always empty.
		writeResult(w, req.ID, s.finish(e, map[string]any{"completion": map[string]any{"values": []string{}, "hasMore": false}}, false))
	case "logging/setLevel", "resources/subscribe", "resources/unsubscribe":
		// Handshake era only. A stateless server keeps no level and no
		// subscription: call logs go out from info, and the bundle's
		// resources never change while a relay runs.
		if e.modern {
			s.notFound(w, req, e)
			return
		}
		writeResult(w, req.ID, map[string]any{})
	case "subscriptions/listen":
		s.listen(w, r, req, e, grant)
	default:
		s.notFound(w, req, e)
	}
}

// notFound answers an unknown method: 404 in the modern era, where the
// status tells it; a plain JSON-RPC error before.
func (s *Server) notFound(w http.ResponseWriter, req *request, e era) {
	err := protocol.ErrMethodNotFoundInBody
	if e.modern {
		err = protocol.ErrMethodNotFound
	}
	writeError(w, req.ID, err.With("Method not found: "+protocol.Clip(req.Method, 100)))
}

func (s *Server) serverInfo() map[string]any {
	return map[string]any{"name": "tabrelay", "title": s.cfg.Bundle.App.Title + " (tabrelay)", "version": s.cfg.Version}
}

func (s *Server) capabilities() map[string]any {
	return map[string]any{
		// Tool changes reach a host through subscriptions/listen (the
		// stateless era), or on the stream of a call it is waiting for
		// (the handshake era: listchanged.go).
		"tools": map[string]any{"listChanged": true},
		// The bundle's resources never change while a relay runs, so no
		// channel ever carries a resource update: subscribing is not
		// offered (a handshake-era resources/subscribe is still answered).
		"resources":   map[string]any{"listChanged": false},
		"prompts":     map[string]any{"listChanged": false},
		"completions": map[string]any{},
		"logging":     map[string]any{},
	}
}

func (s *Server) initialize(w http.ResponseWriter, req *request) {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if json.Unmarshal(req.Params, &p) != nil || p.ProtocolVersion == "" {
		writeError(w, req.ID, protocol.ErrInvalidParams.With("initialize needs a protocolVersion."))
		return
	}
	writeResult(w, req.ID, map[string]any{
		"protocolVersion": negotiate(p.ProtocolVersion),
		"capabilities":    s.capabilities(),
		"serverInfo":      s.serverInfo(),
		"instructions":    s.cfg.Bundle.Instructions,
	})
}

// discover answers server/discover; the server's info goes in _meta
// (finish), never in the body.
func (s *Server) discover(e era) map[string]any {
	return map[string]any{
		"supportedVersions": supportedVersions(),
		"capabilities":      s.capabilities(),
		"instructions":      s.cfg.Bundle.Instructions,
	}
}

// finish adds what the modern era asks of a result: resultType, the
// server's info, and for lists how long they may be cached, by whom.
func (s *Server) finish(e era, result map[string]any, cacheable bool) map[string]any {
	if !e.modern {
		return result
	}
	result["resultType"] = "complete"
	result["_meta"] = map[string]any{metaServerInfo: s.serverInfo()}
	if cacheable {
		result["ttlMs"] = listTTL
		result["cacheScope"] = "private"
	}
	return result
}

// toolList is the catalogue as MCP tools (SPEC §4), each description
// saying what the person's settings make of the tool for this connection,
// as the tab says when asked now; without an answer, the bundled
// catalogue, said so.
func (s *Server) toolList(r *http.Request, g protocol.Grant) []map[string]any {
	entries := g.Scope
	names := make([]string, 0, len(s.cfg.Bundle.Tools))
	for _, t := range s.cfg.Bundle.Tools {
		if protocol.NamesTool(entries, t.Name) {
			names = append(names, t.Name)
		}
	}
	perms, answered := s.cfg.Caller.Permissions(r.Context(), g.PairingID, g.Connection(), names)
	granted := func(t *protocol.Tool) []protocol.Action { return protocol.GrantedActions(entries, t) }
	return s.tools(names, granted, func(name string) string {
		if !answered {
			return "No " + s.cfg.Bundle.App.Title + " tab answered when this list was made, so the person's settings for this tool are not known yet."
		}
		switch perms[name] {
		case protocol.PermissionAsks:
			return "In the person's settings for this connection: the person is asked before it runs."
		case protocol.PermissionRuns:
			return "In the person's settings for this connection: runs without asking."
		case protocol.PermissionRefused:
			return "In the person's settings for this connection: refused; calling it will not help unless the person changes that in " + s.cfg.Bundle.App.Title + "."
		}
		return ""
	})
}

// tools is the named tools of the catalogue as MCP tools, with note(name)
// after each description. A tool with actions offers only those granted
// (granted(t)): its schema's action enum and its description are narrowed
// to them, and a tool none of whose actions is granted is left out.
func (s *Server) tools(names []string, granted func(*protocol.Tool) []protocol.Action, note func(string) string) []map[string]any {
	out := make([]map[string]any, 0, len(names))
	for i := range s.cfg.Bundle.Tools {
		t := &s.cfg.Bundle.Tools[i]
		if !slices.Contains(names, t.Name) {
			continue
		}
		desc, schema := t.Description, t.InputSchema
		if len(t.Actions) > 0 {
			actions := granted(t)
			if len(actions) == 0 {
				continue
			}
			if len(actions) < len(t.Actions) {
				desc += "\n\n" + grantedNote(actions)
				schema = narrowedSchema(schema, actions)
			}
		}
		if n := note(t.Name); n != "" {
			desc += "\n\n" + n
		}
		tool := map[string]any{"name": t.Name, "description": desc, "inputSchema": schema}
		if t.Title != "" {
			tool["title"] = t.Title
		}
		if t.Annotations != nil {
			tool["annotations"] = t.Annotations
		}
		if t.UI != "" {
			tool["_meta"] = map[string]any{"ui": map[string]any{"resourceUri": t.UI}, "ui/resourceUri": t.UI}
		}
		out = append(out, tool)
	}
	return out
}

// described adds a title and a description to an MCP object when it has them.
func described(m map[string]any, title, description string) map[string]any {
	if title != "" {
		m["title"] = title
	}
	if description != "" {
		m["description"] = description
	}
	return m
}

// resources are the bundle's UI resources (MCP Apps).
func (s *Server) resources() []map[string]any {
	out := make([]map[string]any, 0, len(s.cfg.Bundle.Resources))
	for _, r := range s.cfg.Bundle.Resources {
		out = append(out, described(map[string]any{"uri": r.URI, "name": r.Name, "mimeType": r.MimeType}, r.Title, r.Description))
	}
	return out
}

func (s *Server) readResource(w http.ResponseWriter, req *request, e era) {
	var p struct {
		URI string `json:"uri"`
	}
	_ = json.Unmarshal(req.Params, &p)
	for _, r := range s.cfg.Bundle.Resources {
		if r.URI == p.URI {
			content := map[string]any{"uri": r.URI, "mimeType": r.MimeType}
			if r.Blob != "" {
				content["blob"] = r.Blob
			} else {
				content["text"] = r.Text
			}
			if len(r.Meta) > 0 {
				content["_meta"] = r.Meta
			}
			writeResult(w, req.ID, s.finish(e, map[string]any{"contents": []any{content}}, true))
			return
		}
	}
	for _, t := range s.cfg.Bundle.Templates {
		if vars, ok := t.Match(p.URI); ok {
			content := map[string]any{"uri": p.URI, "mimeType": t.MimeType, "text": protocol.Fill(t.Text, vars)}
			writeResult(w, req.ID, s.finish(e, map[string]any{"contents": []any{content}}, true))
			return
		}
	}
	writeError(w, req.ID, protocol.ErrInvalidParams.With("Resource not found.").WithData(map[string]string{"uri": p.URI}))
}

func (s *Server) tool(name string) (*protocol.Tool, bool) { return s.cfg.Bundle.Tool(name) }
