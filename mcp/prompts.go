package mcp

import (
	"encoding/json"
	"net/http"

	"github.com/tabrelay/tabrelay/protocol"
)

// prompts are the bundle's canned prompts (MCP prompts/list).
func (s *Server) prompts() []map[string]any {
	out := make([]map[string]any, 0, len(s.cfg.Bundle.Prompts))
	for _, p := range s.cfg.Bundle.Prompts {
		pr := described(map[string]any{"name": p.Name}, p.Title, p.Description)
		if len(p.Arguments) > 0 {
			pr["arguments"] = p.Arguments
		}
		out = append(out, pr)
	}
	return out
}

// templates are the bundle's resource templates.
func (s *Server) templates() []map[string]any {
	out := make([]map[string]any, 0, len(s.cfg.Bundle.Templates))
	for _, t := range s.cfg.Bundle.Templates {
		out = append(out, described(map[string]any{"uriTemplate": t.URITemplate, "name": t.Name, "mimeType": t.MimeType}, t.Title, t.Description))
	}
	return out
}

// getPrompt answers prompts/get: the prompt's messages with the host's
// arguments filled in. The prompts are the app's own words from its
// bundle; the arguments are the host's.
func (s *Server) getPrompt(w http.ResponseWriter, req *request, e era) {
	var p struct {
		Name      string            `json:"name"`
		Arguments map[string]string `json:"arguments"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		writeError(w, req.ID, protocol.ErrInvalidParams.With("prompts/get needs a name and string arguments."))
		return
	}
	pr, ok := s.cfg.Bundle.Prompt(p.Name)
	if !ok {
		writeError(w, req.ID, protocol.ErrInvalidParams.With("Unknown prompt: "+protocol.Clip(p.Name, 100)))
		return
	}
	for _, a := range pr.Arguments {
		if _, given := p.Arguments[a.Name]; a.Required && !given {
			writeError(w, req.ID, protocol.ErrInvalidParams.With("Missing argument: "+a.Name))
			return
		}
	}
	msgs := make([]protocol.PromptMessage, 0, len(pr.Messages))
	for _, m := range pr.Messages {
		c := m.Content
		c.Text = protocol.Fill(c.Text, p.Arguments)
		if c.Resource != nil {
			r := *c.Resource
			r.URI, r.Text = protocol.Fill(r.URI, p.Arguments), protocol.Fill(r.Text, p.Arguments)
			c.Resource = &r
		}
		msgs = append(msgs, protocol.PromptMessage{Role: m.Role, Content: c})
	}
	res := map[string]any{"messages": msgs}
	if pr.Description != "" {
		res["description"] = pr.Description
	}
	writeResult(w, req.ID, s.finish(e, res, false))
}
