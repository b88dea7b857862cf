package livecheck

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
)

// The protocol versions the live check speaks (mcp/era.go): the handshake
// era's latest, and the stateless era.
const (
	handshakeVersion = "2025-11-25"
	modernVersion    = "2026-07-28"
)

// rpc is one MCP answer as the host saw it.
type rpc struct {
	status int
	result map[string]any
	err    map[string]any // the JSON-RPC error, when there is one
	body   string         // the raw body, for messages
}

// errorWords is the JSON-RPC error's message, or the body's start.
func (a rpc) errorWords() string {
	if a.err != nil {
		return fmt.Sprintf("JSON-RPC error %v: %v", a.err["code"], a.err["message"])
	}
	return fmt.Sprintf("HTTP %d: %s", a.status, clip(a.body, 160))
}

// mcpClient is an MCP host of one token at the relay's endpoint.
type mcpClient struct {
	web      *web
	endpoint string
	token    string
	modern   bool   // the stateless era: _meta and its headers on each request
	version  string // MCP-Protocol-Version of the handshake era, once negotiated
	ids      atomic.Int64
}

// call sends one request (notification when id is false) and reads its
// answer, JSON or an event stream.
func (c *mcpClient) call(ctx context.Context, method string, params map[string]any) (rpc, error) {
	if params == nil {
		params = map[string]any{}
	}
	header := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	if c.token != "" {
		header.Set("Authorization", "Bearer "+c.token)
	}
	if c.modern {
		params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": modernVersion,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{}}
		header.Set("MCP-Protocol-Version", modernVersion)
		header.Set("Mcp-Method", method)
		if name, ok := params["name"].(string); ok && method == "tools/call" {
			header.Set("Mcp-Name", name)
		}
		if uri, ok := params["uri"].(string); ok && method == "resources/read" {
			header.Set("Mcp-Name", uri)
		}
	} else if c.version != "" {
		header.Set("MCP-Protocol-Version", c.version)
	}
	msg := map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
	id := c.ids.Add(1)
	notification := strings.HasPrefix(method, "notifications/")
	if !notification {
		msg["id"] = id
	}
	body, _ := json.Marshal(msg)
	r, err := c.web.do(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body), header)
	if err != nil {
		return rpc{}, err
	}
	out := rpc{status: r.status, body: string(r.body)}
	if notification || r.status != http.StatusOK && len(r.body) == 0 {
		return out, nil
	}
	payload := r.body
	if strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		if payload = sseAnswer(r.body, id); payload == nil {
			return out, fmt.Errorf("%s: the event stream ended without the answer", method)
		}
	}
	var m struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if json.Unmarshal(payload, &m) != nil {
		if r.status != http.StatusOK {
			return out, nil // a plain error body: the caller reads status and body
		}
		return out, fmt.Errorf("%s: the answer is not JSON-RPC: %s", method, clip(string(payload), 120))
	}
	out.result, out.err = m.Result, m.Error
	return out, nil
}

// sseAnswer finds the message with id in an event stream's data lines.
func sseAnswer(stream []byte, id int64) []byte {
	sc := bufio.NewScanner(bytes.NewReader(stream))
	sc.Buffer(make([]byte, 64<<10), maxBody)
	var data []string
	var found []byte
	flush := func() {
		if len(data) == 0 {
			return
		}
		payload := []byte(strings.Join(data, "\n"))
		data = nil
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(payload, &m) == nil && string(m.ID) == fmt.Sprint(id) {
			found = payload
		}
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			flush()
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	flush()
	return found
}

// tool is what the live check reads of a listed tool.
type tool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"inputSchema"`
	Annotations map[string]any `json:"annotations"`
	Meta        map[string]any `json:"_meta"`
}

// readOnlyNoArgs: a tool the live check may call on its own.
func (t tool) readOnlyNoArgs() bool {
	if t.Annotations["readOnlyHint"] != true {
		return false
	}
	req, _ := t.InputSchema["required"].([]any)
	return len(req) == 0
}

// runsWithoutAsking: the relay's list says the person's settings let the
// tool run without a question (mcp/methods.go's note after a description),
// so a call needs nobody at the page.
func (t tool) runsWithoutAsking() bool {
	return strings.Contains(t.Description, "runs without asking")
}

// viewCard is the tool's MCP Apps resource URI ("" when none).
func (t tool) viewCard() string {
	if ui, ok := t.Meta["ui"].(map[string]any); ok {
		if s, ok := ui["resourceUri"].(string); ok {
			return s
		}
	}
	s, _ := t.Meta["ui/resourceUri"].(string)
	return s
}

// toolsOf decodes a tools/list result.
func toolsOf(result map[string]any) ([]tool, error) {
	raw, _ := json.Marshal(result["tools"])
	var tools []tool
	if err := json.Unmarshal(raw, &tools); err != nil {
		return nil, fmt.Errorf("tools/list: the tools are not a list of tools")
	}
	return tools, nil
}

func names(tools []tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

// textOf is a tools/call result's first text, and whether it is an error.
func textOf(result map[string]any) (text string, isError bool) {
	isError = result["isError"] == true
	content, _ := result["content"].([]any)
	for _, c := range content {
		if m, ok := c.(map[string]any); ok && m["type"] == "text" {
			s, _ := m["text"].(string)
			return s, isError
		}
	}
	return "", isError
}

// taggedData reports whether text is a tab's result as the relay wraps it:
// its JSON between a pair of data tags (SPEC §4), whatever the bundle
// names them.
func taggedData(text string) bool {
	text = strings.TrimSpace(text)
	if !strings.HasPrefix(text, "<") {
		return false
	}
	end := strings.IndexByte(text, '>')
	if end < 2 {
		return false
	}
	name := text[1:end]
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' || r == ':') {
			return false
		}
	}
	return strings.Contains(text, "</"+name+">")
}
