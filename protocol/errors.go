package protocol

import (
	"fmt"
	"net/http"
)

// RelayError is one error of the relay, with how each front end says it:
// the HTTP status it is answered with, its JSON-RPC error code for an MCP
// host, its OAuth error code, and the relay's own code, which a tab
// request's error message and the admin API carry. The table below holds
// every one (the manner of go-sdk's JSON-RPC wire errors and of
// benbjohnson/wtf's error codes): a front end answers a value of it, with
// its own sentence when it says more than the table's (a name, a limit),
// and errors.Is compares the relay's code, as go-sdk compares JSON-RPC
// codes. The sentence is plain, for a person or a model; what went wrong
// inside is logged, never said.
type RelayError struct {
	// Code is the relay's word for the error: ErrCode* for the errors a
	// tab request is answered with, the admin API's "error" too.
	Code string
	// Status is the HTTP status it is answered with.
	Status int
	// RPC is its JSON-RPC error code (JSON-RPC 2.0 §5.1; the relay's own in
	// -32000…-32099); 0 when no MCP request is answered with it.
	RPC int
	// OAuth is its OAuth error code (RFC 6749 §4.1.2.1 and §5.2, RFC 6750
	// §3.1, RFC 7591 §3.2.2, RFC 8707 §2); "" when it has none.
	OAuth string
	// Message is the sentence.
	Message string
	// Data is what a JSON-RPC error's data member carries, if anything.
	Data any
}

// Error is the code and the sentence, as a log line shows them.
func (e *RelayError) Error() string { return e.Code + ": " + e.Message }

// Is reports whether target is a RelayError of the same code.
func (e *RelayError) Is(target error) bool {
	t, ok := target.(*RelayError)
	return ok && t.Code == e.Code
}

// With is e with another sentence.
func (e *RelayError) With(message string) *RelayError {
	c := *e
	c.Message = message
	return &c
}

// Withf is e with another sentence, formatted.
func (e *RelayError) Withf(format string, args ...any) *RelayError {
	return e.With(fmt.Sprintf(format, args...))
}

// WithData is e with a JSON-RPC data member.
func (e *RelayError) WithData(data any) *RelayError {
	c := *e
	c.Data = data
	return &c
}

// Codes of the errors a tab request is answered with (the Error message;
// docs/tab-protocol.md lists them).
const (
	ErrCodeUnsupported  = "unsupported"      // a request this relay does not handle: the tab may go on
	ErrCodeWrongCode    = "wrong-code"       // no pending connect request has this code
	ErrCodeCodeUsed     = "code-used"        // the code was approved or declined already
	ErrCodeCodeExpired  = "code-expired"     // the code's 10 minutes are over
	ErrCodeLimited      = "limited"          // too many wrong codes: wait
	ErrCodeNotFound     = "not-found"        // no such connection of this browser
	ErrCodeInvalidScope = "invalid-scope"    // the scope names tools or actions the catalogue lacks
	ErrCodeBadRequest   = "bad-request"      // a request without the fields it needs
	ErrCodeUnavailable  = "unavailable"      // the relay could not do it now; try again
	ErrCodeCrossDevice  = "cross-device-off" // a typed code, where the operator allows link approvals only
)

// JSON-RPC error codes (JSON-RPC 2.0 §5.1; MCP basic/transports for the
// header and version codes; the relay's own from -32000).
const (
	rpcParse              = -32700
	rpcInvalidRequest     = -32600
	rpcMethodNotFound     = -32601
	rpcInvalidParams      = -32602
	rpcHeaderMismatch     = -32020 // a modern header is missing or differs from the body
	rpcUnsupportedVersion = -32022 // the protocol version is not one this server speaks
	rpcUnavailable        = -32000 // the relay cannot serve the request now: HTTP 503 with Retry-After
	rpcLimit              = -32001 // over one of the relay's limits: HTTP 429, the sentence says which
)

// The table. Values that share a code are the same error answered at
// another status (a wrong method is a bad request, answered 405).
var (
	// Every front end.
	ErrBadRequest = &RelayError{Code: ErrCodeBadRequest, Status: http.StatusBadRequest, RPC: rpcInvalidRequest, OAuth: "invalid_request",
		Message: "The request lacks what it needs."}
	ErrUnavailable = &RelayError{Code: ErrCodeUnavailable, Status: http.StatusServiceUnavailable, RPC: rpcUnavailable, OAuth: "temporarily_unavailable",
		Message: "The relay could not do this now; try again."}
	ErrLimited = &RelayError{Code: ErrCodeLimited, Status: http.StatusTooManyRequests, RPC: rpcLimit, OAuth: "slow_down",
		Message: "Too many wrong codes. Wait a minute, then enter the code again."}
	ErrInvalidScope = &RelayError{Code: ErrCodeInvalidScope, Status: http.StatusBadRequest, OAuth: "invalid_scope",
		Message: "The scope names a tool or action the catalogue does not have, or a tool twice."}
	ErrNotFound = &RelayError{Code: ErrCodeNotFound, Status: http.StatusNotFound,
		Message: "This browser has no such connection."}
	ErrUnauthorized = &RelayError{Code: "unauthorized", Status: http.StatusUnauthorized, OAuth: "invalid_token",
		Message: "A valid bearer token for this relay is required."}
	ErrMethodNotAllowed = &RelayError{Code: ErrCodeBadRequest, Status: http.StatusMethodNotAllowed, RPC: rpcInvalidRequest, OAuth: "invalid_request",
		Message: "This route does not take this method."}
	ErrTooLarge = &RelayError{Code: "too-large", Status: http.StatusRequestEntityTooLarge, RPC: rpcInvalidRequest,
		Message: "The request body is larger than the relay's limit."}
	ErrForbidden = &RelayError{Code: "forbidden", Status: http.StatusForbidden,
		Message: "This origin may not connect tabs to the relay."}

	// Tab requests.
	ErrUnsupported = &RelayError{Code: ErrCodeUnsupported, Status: http.StatusBadRequest,
		Message: "This relay does not handle this request."}
	ErrWrongCode = &RelayError{Code: ErrCodeWrongCode, Status: http.StatusNotFound,
		Message: "No connection waits for this code. Check it on the page of the application that asks."}
	ErrCrossDeviceOff = &RelayError{Code: ErrCodeCrossDevice, Status: http.StatusForbidden,
		Message: "This relay connects an agent only through the approval link on its waiting page, opened in the browser that shows that page: a typed code is not accepted."}
	ErrUsedCode = &RelayError{Code: ErrCodeCodeUsed, Status: http.StatusConflict,
		Message: "This code was used already. Start again from the application."}
	ErrExpiredCode = &RelayError{Code: ErrCodeCodeExpired, Status: http.StatusGone,
		Message: "This code expired. Start again from the application."}

	// MCP (the Streamable HTTP transport).
	ErrParse = &RelayError{Code: "parse-error", Status: http.StatusBadRequest, RPC: rpcParse,
		Message: "The body is not JSON."}
	ErrBodyTimeout = &RelayError{Code: "body-timeout", Status: http.StatusRequestTimeout, RPC: rpcInvalidRequest,
		Message: "The request body stopped arriving before the relay's read timeout; send it again whole."}
	// ErrInvalidParams is answered in the body (HTTP 200) once a method
	// runs; ErrMalformedParams before it, where the modern era says it in
	// the status too.
	ErrInvalidParams = &RelayError{Code: "invalid-params", Status: http.StatusOK, RPC: rpcInvalidParams,
		Message: "The request's params are not what the method takes."}
	ErrMalformedParams = &RelayError{Code: "invalid-params", Status: http.StatusBadRequest, RPC: rpcInvalidParams,
		Message: "params must be an object."}
	// ErrMethodNotFound is the modern era's (404); the legacy era answers
	// it in the body, ErrMethodNotFoundInBody.
	ErrMethodNotFound = &RelayError{Code: "method-not-found", Status: http.StatusNotFound, RPC: rpcMethodNotFound,
		Message: "Method not found."}
	ErrMethodNotFoundInBody = &RelayError{Code: "method-not-found", Status: http.StatusOK, RPC: rpcMethodNotFound,
		Message: "Method not found."}
	ErrHeaderMismatch = &RelayError{Code: "header-mismatch", Status: http.StatusBadRequest, RPC: rpcHeaderMismatch,
		Message: "A request header differs from the request's body."}
	ErrUnsupportedVersion = &RelayError{Code: "unsupported-version", Status: http.StatusBadRequest, RPC: rpcUnsupportedVersion,
		Message: "Unsupported protocol version."}

	// OAuth (the authorization server).
	ErrInvalidGrant = &RelayError{Code: "invalid-grant", Status: http.StatusBadRequest, OAuth: "invalid_grant",
		Message: "The grant is unknown, expired or revoked."}
	ErrInvalidClient = &RelayError{Code: "invalid-client", Status: http.StatusUnauthorized, OAuth: "invalid_client",
		Message: "client_id is required (public clients authenticate with PKCE)."}
	ErrInvalidTarget = &RelayError{Code: "invalid-target", Status: http.StatusBadRequest, OAuth: "invalid_target",
		Message: "The resource is not this relay."}
	ErrUnsupportedGrantType = &RelayError{Code: "unsupported-grant-type", Status: http.StatusBadRequest, OAuth: "unsupported_grant_type",
		Message: "The grant type is not one this relay issues tokens for."}
	ErrUnsupportedResponseType = &RelayError{Code: "unsupported-response-type", Status: http.StatusBadRequest, OAuth: "unsupported_response_type",
		Message: "response_type must be code"}
	ErrInvalidClientMetadata = &RelayError{Code: "invalid-client-metadata", Status: http.StatusBadRequest, OAuth: "invalid_client_metadata",
		Message: "The registration is not one JSON object of client metadata (at most 64 KiB)."}
	ErrInvalidRedirectURI = &RelayError{Code: "invalid-redirect-uri", Status: http.StatusBadRequest, OAuth: "invalid_redirect_uri",
		Message: "The redirect URIs are not ones the relay registers."}
	ErrAccessDenied = &RelayError{Code: "access-denied", Status: http.StatusForbidden, OAuth: "access_denied",
		Message: "the person declined the connection"}

	// The admin API.
	ErrAdminDisabled = &RelayError{Code: "admin-disabled", Status: http.StatusNotFound,
		Message: "The admin API is off on this relay: start it with RELAY_ADMIN_TOKEN set (16 characters or more)."}
)

// RelayErrors lists the table, for the tests and documents that hold to it.
func RelayErrors() []*RelayError {
	return []*RelayError{ErrBadRequest, ErrUnavailable, ErrLimited, ErrInvalidScope, ErrNotFound, ErrUnauthorized,
		ErrMethodNotAllowed, ErrTooLarge, ErrForbidden, ErrUnsupported, ErrWrongCode, ErrUsedCode, ErrExpiredCode, ErrCrossDeviceOff,
		ErrParse, ErrBodyTimeout, ErrInvalidParams, ErrMalformedParams, ErrMethodNotFound, ErrMethodNotFoundInBody,
		ErrHeaderMismatch, ErrUnsupportedVersion, ErrInvalidGrant, ErrInvalidClient, ErrInvalidTarget,
		ErrUnsupportedGrantType, ErrUnsupportedResponseType, ErrInvalidClientMetadata, ErrInvalidRedirectURI,
		ErrAccessDenied, ErrAdminDisabled}
}
