package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
)

// Arguments are a tools/call's arguments, decoded once: the scope guard
// reads the call's action from them, the inputSchema check checks them,
// and the tab gets JSON encoded from that same value, so that what was
// checked is what runs.
type Arguments struct {
	// JSON is the value encoded again. It is one object; its keys are
	// sorted at every depth, and a key written twice keeps its last value,
	// as JavaScript's parser does; numbers are as the host wrote them.
	// Its strings are UTF-8: each byte of the host's that is none, and
	// each escaped lone surrogate ("\ud800"), is U+FFFD (Go's decoding:
	// a browser's makes one U+FFFD of a cut sequence, Go one per byte). A
	// browser fails a WebSocket whose text frame is not UTF-8, and a
	// host's raw bytes in a call cut the tab's socket, every other call
	// on it with it.
	JSON json.RawMessage

	value    map[string]any // numbers as float64, for the checker
	values   int            // the JSON values in value, value included
	tooLarge json.Number    // a number no float64 holds, which the checker refuses
}

// ErrArgumentsNoObject is DecodeArguments' error for arguments that are
// no JSON object.
var ErrArgumentsNoObject = errors.New("tools/call arguments must be an object")

// noArguments are absent arguments, or null: an empty object.
var noArguments = json.RawMessage("{}")

// DecodeArguments decodes a call's arguments: absent or null is an empty
// object, and anything but one object is refused.
func DecodeArguments(raw json.RawMessage) (Arguments, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return Arguments{JSON: noArguments, value: map[string]any{}, values: 1}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // exact numbers for the tab; the checker's floats come after
	var v any
	if dec.Decode(&v) != nil {
		return Arguments{}, ErrArgumentsNoObject
	}
	m, ok := v.(map[string]any)
	if _, err := dec.Token(); err != io.EOF || !ok {
		return Arguments{}, ErrArgumentsNoObject
	}
	out, err := json.Marshal(m)
	if err != nil {
		return Arguments{}, ErrArgumentsNoObject
	}
	a := Arguments{JSON: out, value: m}
	a.values = a.floats(m)
	return a, nil
}

// String is the argument named key when it is a string.
func (a Arguments) String(key string) (string, bool) {
	s, ok := a.value[key].(string)
	return s, ok
}

// floats turns the numbers of v (decoded as json.Number) into float64,
// in place, as json.Unmarshal would have decoded them, and counts v's
// JSON values, v included.
func (a *Arguments) floats(v any) int {
	n := 1
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			if num, ok := e.(json.Number); ok {
				x[i] = a.float(num)
			}
			n += a.floats(x[i])
		}
	case map[string]any:
		for k, e := range x {
			if num, ok := e.(json.Number); ok {
				x[k] = a.float(num)
			}
			n += a.floats(x[k])
		}
	}
	return n
}

func (a *Arguments) float(num json.Number) any {
	f, err := strconv.ParseFloat(string(num), 64)
	if err != nil && a.tooLarge == "" {
		a.tooLarge = num
	}
	return f
}
