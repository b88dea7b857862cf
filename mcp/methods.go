package mcp

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/tabrelay/tabrelay/protocol"
)

// listTTL is how long a host may keep a list (modern era: ttlMs). Lists
// depend on the token, so they are private to it.
const listTTL = 60_000

// eras is the set of eras a method is served in.
type eras uint8

const (
	handshakeEra eras = 1 << iota // initialize first (2024-11-05 … 2025-11-25)
	modernEra                     // stateless (2026-07-28)
	bothEras     = handshakeEra | modernEra
)

func (m eras) serve(e era) bool {
	if e.modern {
		return m&modernEra != 0
	}
	return m&handshakeEra != 0
}

// rpc is one request being served: what a method's handler gets.
type rpc struct {
	w      http.ResponseWriter
	r      *http.Request
	req    *request
	params *paramsMeta // req's params, decoded
	era    era
	grant  protocol.Grant
}

// methodInfo is the relay's whole rule for one MCP method (as go-sdk's
// serverMethodInfos): the eras that serve it (elsewhere it is not found),
// the capabilities it makes the relay announce in those eras ("key" or
// "key.flag": initialize and server/discover build theirs from this table),
// the params field the modern era's Mcp-Name header must equal, and its
// handler.
type methodInfo struct {
	eras         eras
	capabilities []string
	mcpName      string // "name" or "uri"; "" when the method names nothing
	handle       func(*Server, *rpc)
}

// serverMethods is every method the relay serves. Adding one is one row
// here (and its handler). It is set in init: initialize and
// server/discover read it back for the capabilities they announce.
var serverMethods map[string]methodInfo

func init() {
	serverMethods = map[string]methodInfo{
		"initialize":      {eras: handshakeEra, handle: func(s *Server, x *rpc) { s.initialize(x.w, x.req) }},
		"ping":            {eras: handshakeEra, handle: empty},
		"server/discover": {eras: bothEras, handle: func(s *Server, x *rpc) { writeResult(x.w, x.req.ID, s.finish(x.era, s.discover(x.era), true)) }},
		"tools/list": {eras: bothEras, capabilities: []string{"tools"},
			handle: list("tools", func(s *Server, x *rpc) any { return s.toolList(x.r, x.grant) })},
		// A call's log messages go out from info on its own stream
		// (notifications/message), in either era: hence "logging". In the
		// handshake era, which has no other stream, that stream also
		// carries the tool list's changes (listchanged.go).
		"tools/call": {eras: bothEras, capabilities: []string{"tools", "logging", "tools.listChanged"}, mcpName: "name",
			handle: func(s *Server, x *rpc) { s.callTool(x.w, x.r, x.req, x.params, x.era, x.grant) }},
		"resources/list": {eras: bothEras, capabilities: []string{"resources"},
			handle: list("resources", func(s *Server, _ *rpc) any { return s.resources() })},
		"resources/templates/list": {eras: bothEras, capabilities: []string{"resources"},
			handle: list("resourceTemplates", func(s *Server, _ *rpc) any { return s.templates() })},
		"resources/read": {eras: bothEras, capabilities: []string{"resources"}, mcpName: "uri",
			handle: func(s *Server, x *rpc) { s.readResource(x.w, x.req, x.era) }},
		"prompts/list": {eras: bothEras, capabilities: []string{"prompts"},
			handle: list("prompts", func(s *Server, _ *rpc) any { return s.prompts() })},
		"prompts/get": {eras: bothEras, capabilities: []string{"prompts"}, mcpName: "name",
			handle: func(s *Server, x *rpc) { s.getPrompt(x.w, x.req, x.era) }},
		// Nothing of the relay's takes completions (it has no prompt
		// arguments to complete and no resource templates to fill): the
		// answer is always empty.
		"completion/complete": {eras: bothEras, capabilities: []string{"completions"}, handle: func(s *Server, x *rpc) {
			writeResult(x.w, x.req.ID, s.finish(x.era, map[string]any{"completion": map[string]any{"values": []string{}, "hasMore": false}}, false))
		}},
		// A stateless server keeps no level and no subscription: call logs go
		// out from info. So these are the handshake era's only, and answer
		// empty. The bundle's resources never change while a relay runs, so
		// no channel ever carries a resource update: subscribing is answered
		// but not offered (no resources.subscribe).
		"logging/setLevel":      {eras: handshakeEra, capabilities: []string{"logging"}, handle: empty},
		"resources/subscribe":   {eras: handshakeEra, handle: empty},
		"resources/unsubscribe": {eras: handshakeEra, handle: empty},
		// The stateless era's stream of changes.
		"subscriptions/listen": {eras: modernEra, capabilities: []string{"tools.listChanged"},
			handle: func(s *Server, x *rpc) { s.listen(x.w, x.r, x.req, x.era, x.grant) }},
	}
}

// empty answers an empty result.
func empty(_ *Server, x *rpc) { writeResult(x.w, x.req.ID, map[string]any{}) }

// list answers a list method: its items under key, cacheable.
func list(key string, items func(*Server, *rpc) any) func(*Server, *rpc) {
	return func(s *Server, x *rpc) {
		writeResult(x.w, x.req.ID, s.finish(x.era, map[string]any{key: items(s, x)}, true))
	}
}

// handle serves one request of grant: the method's row of serverMethods,
// in the eras that serve it.
func (s *Server) handle(w http.ResponseWriter, r *http.Request, req *request, grant protocol.Grant) {
	var p paramsMeta
	e, rerr := eraOf(r, req, &p)
	if rerr != nil {
		writeError(w, req.ID, rerr)
		return
	}
	m, ok := serverMethods[req.Method]
	if !ok || !m.eras.serve(e) {
		s.notFound(w, req, e)
		return
	}
	m.handle(s, &rpc{w: w, r: r, req: req, params: &p, era: e, grant: grant})
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

// serverInfo is the relay's name, title and version, made once (NewServer):
// every modern-era result carries it. Nothing may change it.
func (s *Server) serverInfo() map[string]any { return s.info }

// capabilities is what the relay announces in era e: each capability of
// a method served in e (serverMethods), a "key.flag" one as {"flag": true}
// under key. Nothing else: what no method of e serves is not promised.
func (s *Server) capabilities(e era) map[string]any {
	caps := map[string]any{}
	for _, m := range serverMethods {
		if !m.eras.serve(e) {
			continue
		}
		for _, c := range m.capabilities {
			key, flag, _ := strings.Cut(c, ".")
			sub, _ := caps[key].(map[string]any)
			if sub == nil {
				sub = map[string]any{}
				caps[key] = sub
			}
			if flag != "" {
				sub[flag] = true
			}
		}
	}
	return caps
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
		"capabilities":    s.capabilities(era{version: p.ProtocolVersion}),
		"serverInfo":      s.serverInfo(),
		"instructions":    s.cfg.Bundle.Instructions,
	})
}

// discover answers server/discover; the server's info goes in _meta
// (finish), never in the body.
func (s *Server) discover(e era) map[string]any {
	return map[string]any{
		"supportedVersions": supportedVersions(),
		"capabilities":      s.capabilities(e),
		"instructions":      s.cfg.Bundle.Instructions,
	}
}

// finish adds what the modern era asks of a result: resultType, the
// server's info, and for lists how long they may be cached, by whom.
func (s *Server) finish(e era, result map[string]any, cacheable bool) map[string]any {
	if !e.modern {
		return result
	}
	result["resultType"] = resultComplete
	result["_meta"] = s.resultMeta()
	if cacheable {
		result["ttlMs"] = listTTL
		result["cacheScope"] = "private"
	}
	return result
}

// resultComplete is the modern era's resultType of a whole result.
const resultComplete = "complete"

// resultMeta is the _meta of a modern era's result: the server's info.
func (s *Server) resultMeta() map[string]any {
	return map[string]any{metaServerInfo: s.serverInfo()}
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
