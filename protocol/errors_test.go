package protocol

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// oauthCodes are the OAuth error codes the RFCs register: an OAuth field
// of the table must be one of them.
var oauthCodes = []string{
	"invalid_request", "invalid_client", "invalid_grant", "unauthorized_client", "unsupported_grant_type", "invalid_scope", // RFC 6749 §5.2
	"access_denied", "unsupported_response_type", "server_error", "temporarily_unavailable", // RFC 6749 §4.1.2.1
	"invalid_token", "insufficient_scope", // RFC 6750 §3.1
	"invalid_redirect_uri", "invalid_client_metadata", // RFC 7591 §3.2.2
	"invalid_target", // RFC 8707 §2
	"slow_down",      // RFC 8628 §3.5
}

// TestErrorTable holds the table to what each front end needs of it.
func TestErrorTable(t *testing.T) {
	table := RelayErrors()
	kinds := map[string]*RelayError{} // the first value of each code
	for _, e := range table {
		t.Run(e.Code+"/"+http.StatusText(e.Status), func(t *testing.T) {
			if e.Code == "" || http.StatusText(e.Status) == "" || strings.TrimSpace(e.Message) == "" {
				t.Fatalf("%+v: a code, an HTTP status and a sentence, every one", e)
			}
			if e.RPC != 0 && !(e.RPC >= -32768 && e.RPC <= -32000) {
				t.Fatalf("JSON-RPC code %d is outside the range JSON-RPC 2.0 reserves", e.RPC)
			}
			if e.OAuth != "" && !slices.Contains(oauthCodes, e.OAuth) {
				t.Fatalf("OAuth code %q is none the RFCs register", e.OAuth)
			}
			if e.Data != nil {
				t.Fatal("a value of the table carries data: data belongs to one answer (WithData)")
			}
			// Values sharing a code are the same error at another status:
			// every front end but HTTP says them alike.
			if k, ok := kinds[e.Code]; ok && (k.RPC != e.RPC || k.OAuth != e.OAuth) {
				t.Fatalf("%q is JSON-RPC %d / OAuth %q here and %d / %q in another value", e.Code, e.RPC, e.OAuth, k.RPC, k.OAuth)
			} else if !ok {
				kinds[e.Code] = e
			}
		})
	}
	// Every value is listed (a value left out of RelayErrors escapes these
	// checks), once.
	for i, e := range table {
		if slices.Index(table, e) != i {
			t.Fatalf("%s is listed twice", e)
		}
	}
	for _, code := range []string{ErrCodeUnsupported, ErrCodeWrongCode, ErrCodeCodeUsed, ErrCodeCodeExpired, ErrCodeLimited,
		ErrCodeNotFound, ErrCodeInvalidScope, ErrCodeBadRequest, ErrCodeUnavailable} {
		if kinds[code] == nil {
			t.Errorf("the tab's error code %q has no value in the table", code)
		}
	}
}

func TestRelayErrorsCompareByCode(t *testing.T) {
	said := ErrUnavailable.With("The store is away; retry in a few seconds.").WithData(map[string]int{"n": 1})
	if !errors.Is(said, ErrUnavailable) || errors.Is(said, ErrBadRequest) {
		t.Fatal("an error with its own sentence is still the table's, and only that one")
	}
	if ErrUnavailable.Message != "The relay could not do this now; try again." || ErrUnavailable.Data != nil {
		t.Fatalf("With changed the table: %+v", ErrUnavailable)
	}
	if !errors.Is(ErrMethodNotAllowed, ErrBadRequest) || !errors.Is(ErrMalformedParams, ErrInvalidParams) {
		t.Fatal("a value answered at another status is the same error")
	}
	// A tab's client reads only the code and the sentence off the wire.
	var wire error = &RelayError{Code: ErrCodeWrongCode, Message: "No such code."}
	var rerr *RelayError
	if !errors.Is(wire, ErrWrongCode) || !errors.As(wire, &rerr) || rerr.Message != "No such code." {
		t.Fatal("an error read off the tab's wire is the table's by its code")
	}
	if got := ErrLimited.Withf("At most %d streams.", 4).Error(); got != "limited: At most 4 streams." {
		t.Fatalf("Error() = %q", got)
	}
}
