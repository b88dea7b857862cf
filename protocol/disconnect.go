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

// closeInfo is the relay's whole word on one close code.
type closeInfo struct {
	code CloseCode
	// name is the code's name in logs, metric labels and the SDK
	// (bad_secret there is the stop reason "bad-secret").
	name string
	// reason is the text of the close frame (at most 123 bytes).
	reason string
	// reconnect says whether the tab connects again (the reconnect range)
	// or stops (the stop range and 1009).
	reconnect bool
}

// closeTable is every close code, written once. docs/tab-protocol.md §16
// and the SDK's web/sdk/src/close-codes.ts are checked against it (the
// latter is generated from it: go generate ./protocol).
var closeTable = []closeInfo{
	{CloseShutdown, "shutdown", "relay node going away; reconnect", true},
	{CloseSlow, "slow", "tab too slow to read; reconnect", true},
	{CloseNoHello, "no_hello", "no hello in time", true},
	{ClosePingTimeout, "ping_timeout", "no pong in time", true},
	{CloseTooFast, "too_fast", "too many messages", true},
	{CloseTooManyTabs, "too_many_tabs", "too many tabs of this browser connected", true},
	{CloseInternal, "internal", "relay error; reconnect", true},
	{CloseUnavailable, "unavailable", "pairing unavailable; reconnect", true},
	{CloseReplaced, "replaced", "replaced by a newer socket of this tab", true},
	{CloseBadSecret, "bad_secret", "bad tab secret", false},
	{CloseUnsupportedProtocol, "unsupported_protocol", "unsupported protocol version; reload the app", false},
	{CloseForgotten, "forgotten", "this browser's pairing was forgotten", false},
	{CloseBadMessage, "bad_message", "message not of the protocol; reload the app", false},
	{CloseTooBig, "too_big", "message too big", false},
}

// info is c's row of the table, if it has one.
func (c CloseCode) info() (closeInfo, bool) {
	for _, i := range closeTable {
		if i.code == c {
			return i, true
		}
	}
	return closeInfo{}, false
}

// Reason is the short text sent with the close frame (under the 123 bytes a
// close reason may hold).
func (c CloseCode) Reason() string {
	if i, ok := c.info(); ok {
		return i.reason
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

// Reconnect reports whether a tab closed with c should connect again: its
// row says. Codes of no row in the stop range (a newer relay's) stop too;
// those outside it (network failures, 1001 going away, 1006 abnormal
// closure) are treated as reconnect.
func (c CloseCode) Reconnect() bool {
	if i, ok := c.info(); ok {
		return i.reconnect
	}
	return c < CloseBadSecret || c > stopRangeEnd
}

// Stop reports whether a tab closed with c stops for good.
func (c CloseCode) Stop() bool { return !c.Reconnect() }

// String names the code for logs and metric labels.
func (c CloseCode) String() string {
	if i, ok := c.info(); ok {
		return i.name
	}
	return fmt.Sprintf("code_%d", int(c))
}

// CloseCodes lists every code of the table, for metrics created at zero and
// for the documentation test.
func CloseCodes() []CloseCode {
	codes := make([]CloseCode, 0, len(closeTable))
	for _, i := range closeTable {
		codes = append(codes, i.code)
	}
	return codes
}
