package mcp

import (
	"encoding/json"
	"fmt"
)

// JSON-RPC and MCP error codes (JSON-RPC 2.0; MCP basic/transports).
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeHeaderMismatch = -32020 // a modern header is missing or differs from the body
	CodeUnsupportedVer = -32022 // the protocol version is not one this server speaks
	CodeUnavailable    = -32000 // the relay cannot serve the request now: HTTP 503 with Retry-After
	CodeLimit          = -32001 // over one of the relay's limits: HTTP 429, the message says which
)

// Error is a JSON-RPC error object; errors are values compared by code.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
	status  int    // the HTTP status this error is answered with
}

func (e *Error) Error() string { return fmt.Sprintf("jsonrpc %d: %s", e.Code, e.Message) }

func rpcError(status, code int, msg string, data any) *Error {
	return &Error{Code: code, Message: msg, Data: data, status: status}
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
	Error   *Error          `json:"error,omitempty"`
}

// notification is one outgoing JSON-RPC notification.
type notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

// validID accepts the ids JSON-RPC allows: a string or a number.
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	switch id[0] {
	case '"':
		var s string
		return json.Unmarshal(id, &s) == nil
	case 'n':
		return false
	}
	var n json.Number
	return json.Unmarshal(id, &n) == nil
}
