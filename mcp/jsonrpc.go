package mcp

import (
	"encoding/json"
)

// wireError is a JSON-RPC error object (JSON-RPC 2.0 §5.1): a
// protocol.RelayError as an MCP host reads it.
type wireError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// request is one incoming JSON-RPC message.
type request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

func (r *request) isNotification() bool { return r.Method != "" && len(r.ID) == 0 }
func (r *request) isResponse() bool     { return r.Method == "" && (r.Result != nil || r.Error != nil) }

// response is one outgoing JSON-RPC response.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *wireError      `json:"error,omitempty"`
}

// notification is one outgoing JSON-RPC notification.
type notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

// validID accepts the ids JSON-RPC allows: a string or a number. id is
// a JSON value as a decoder kept it (json.RawMessage: valid JSON, no space
// around it), so its first byte says which it is.
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	c := id[0]
	return c == '"' || c == '-' || '0' <= c && c <= '9'
}
