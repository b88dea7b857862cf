package protocol

import (
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// CloseCode is a WebSocket close code the relay ends a tab socket with.
// Codes are written down once, here (SPEC §6): 4000–4099 tell the tab to
// reconnect (with its backoff, or after the drain delay), 4100–4199 tell it
// to stop and have the app reload or re-pair: reconnecting would only get
// the same answer.
type CloseCode int

// The reconnect range.
const (
	CloseShutdown    CloseCode = 4000 // the relay node is going away (drain)
	CloseSlow        CloseCode = 4001 // the tab did not read fast enough: its send queue filled
	CloseNoHello     CloseCode = 4002 // no hello within the hello deadline
	ClosePingTimeout CloseCode = 4003 // no message for two ping intervals
	CloseTooFast     CloseCode = 4004 // more messages per second than allowed
	CloseTooManyTabs CloseCode = 4005 // the browser has as many tabs connected as the relay allows
	CloseInternal    CloseCode = 4006 // the relay failed; try again
	CloseUnavailable CloseCode = 4007 // the pairing cannot be reached right now (store or placement down)
	CloseReplaced    CloseCode = 4008 // a newer socket of the same tab took over
)

// The stop range.
const (
	CloseBadSecret           CloseCode = 4100 // the hello's secret is missing or malformed
	CloseUnsupportedProtocol CloseCode = 4101 // the tab speaks another protocol version: reload the app
	CloseForgotten           CloseCode = 4102 // reserved: the pairing was forgotten, make a new secret (not sent by this build; the SDK still handles it)
	CloseBadMessage          CloseCode = 4103 // a message that is not of the protocol: reload the app
	stopRangeEnd             CloseCode = 4199
)

// CloseTooBig is the standard code (RFC 6455 "message too big") the socket
// library closes with when a tab's message exceeds the read limit. It is in
// the stop set: the same app would send the same message again.
const CloseTooBig CloseCode = 1009

var closeReasons = map[CloseCode]string{
	CloseShutdown:            "relay node going away; reconnect",
	CloseSlow:                "tab too slow to read; reconnect",
	CloseNoHello:             "no hello in time",
	ClosePingTimeout:         "no pong in time",
	CloseTooFast:             "too many messages",
	CloseTooManyTabs:         "too many tabs of this browser connected",
	CloseInternal:            "relay error; reconnect",
	CloseUnavailable:         "pairing unavailable; reconnect",
	CloseReplaced:            "replaced by a newer socket of this tab",
	CloseBadSecret:           "bad tab secret",
	CloseUnsupportedProtocol: "unsupported protocol version; reload the app",
	CloseForgotten:           "this browser's pairing was forgotten",
	CloseBadMessage:          "message not of the protocol; reload the app",
	CloseTooBig:              "message too big",
}

// Reason is the short text sent with the close frame (under the 123 bytes a
// close reason may hold).
func (c CloseCode) Reason() string {
	if r, ok := closeReasons[c]; ok {
		return r
	}
	return fmt.Sprintf("close code %d", int(c))
}

// NewBrowserWaitReason is the reason of the 4007 that refuses a browser
// the relay does not know, from an address that made its new pairings for
// now (issue 23): it says when to come back, in whole seconds, which
// RetryIn reads.
func NewBrowserWaitReason(wait time.Duration) string {
	return fmt.Sprintf("too many new browsers from this address; retry in %d s", int64((wait+time.Second-1)/time.Second))
}

var retryIn = regexp.MustCompile(`retry in ([0-9]{1,9}) s$`)

// RetryIn reads the wait a close reason ends with ("retry in N s"), or 0.
func RetryIn(reason string) time.Duration {
	m := retryIn.FindStringSubmatch(reason)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return time.Duration(n) * time.Second
}

// Reconnect reports whether a tab closed with c should connect again. Codes
// outside both ranges (network failures, 1001 going away, 1006 abnormal
// closure) are treated as reconnect: only the stop range stops a tab.
func (c CloseCode) Reconnect() bool { return !c.Stop() }

// Stop reports whether c is in the stop range.
func (c CloseCode) Stop() bool {
	return c == CloseTooBig || (c >= CloseBadSecret && c <= stopRangeEnd)
}

// String names the code for logs and metric labels.
func (c CloseCode) String() string {
	if name, ok := closeNames[c]; ok {
		return name
	}
	return fmt.Sprintf("code_%d", int(c))
}

var closeNames = map[CloseCode]string{
	CloseShutdown:            "shutdown",
	CloseSlow:                "slow",
	CloseNoHello:             "no_hello",
	ClosePingTimeout:         "ping_timeout",
	CloseTooFast:             "too_fast",
	CloseTooManyTabs:         "too_many_tabs",
	CloseInternal:            "internal",
	CloseUnavailable:         "unavailable",
	CloseReplaced:            "replaced",
	CloseBadSecret:           "bad_secret",
	CloseUnsupportedProtocol: "unsupported_protocol",
	CloseForgotten:           "forgotten",
	CloseBadMessage:          "bad_message",
	CloseTooBig:              "too_big",
}

// CloseCodes lists every code of the table, for metrics created at zero and
// for the documentation test.
func CloseCodes() []CloseCode {
	codes := make([]CloseCode, 0, len(closeReasons))
	codes = append(codes, CloseTooBig)
	for c := CloseShutdown; c <= stopRangeEnd; c++ {
		if _, ok := closeReasons[c]; ok {
			codes = append(codes, c)
		}
	}
	return codes
}
