package protocol

import (
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

// TestArgumentsReachTheTabAsTheyWereChecked: DecodeArguments' JSON is
// what the guard read and the schema checked, written again: keys sorted
// at every depth with a repeated key's last value (JavaScript's reading),
// numbers as the host wrote them, and nothing a browser's socket refuses.
func TestArgumentsReachTheTabAsTheyWereChecked(t *testing.T) {
	for raw, want := range map[string]string{
		``:     `{}`,
		`null`: `{}`,
		`{"b":{"d":1,"c":[{"z":0,"y":1}]},"a":2}`:               `{"a":2,"b":{"c":[{"y":1,"z":0}],"d":1}}`,
		`{"action":"get","action":"reset","x":{"k":1,"k":2}}`:   `{"action":"reset","x":{"k":2}}`,
		`{"n":12345678901234567890,"f":1.0,"e":1e400,"m":-0}`:   `{"e":1e400,"f":1.0,"m":-0,"n":12345678901234567890}`,
		"{\"s\":\"a\xffb\",\"t\":\"\xed\xa0\x80\",\"\xc3(\":1}": `{"s":"a` + "\ufffd" + `b","t":"` + "\ufffd\ufffd\ufffd" + `","` + "\ufffd" + `(":1}`,
		`{"lone":"\ud800","html":"<a>&"}`:                       `{"html":"\u003ca\u003e\u0026","lone":"` + "\ufffd" + `"}`,
		" {\"spaced\" :\n true } ":                              `{"spaced":true}`,
	} {
		a, err := DecodeArguments(json.RawMessage(raw))
		if err != nil {
			t.Errorf("%q: %v", raw, err)
			continue
		}
		if string(a.JSON) != want || !utf8.Valid(a.JSON) {
			t.Errorf("%q: %s, want %s", raw, a.JSON, want)
		}
	}
	for _, raw := range []string{`[1]`, `"s"`, `1`, `true`, `{"a":1} {}`, `{"a":`, `{"a":1}]`, ` null `} {
		if _, err := DecodeArguments(json.RawMessage(raw)); !errors.Is(err, ErrArgumentsNoObject) {
			t.Errorf("%q: %v, want ErrArgumentsNoObject", raw, err)
		}
	}
	a, _ := DecodeArguments(json.RawMessage(`{"action":"get","n":1}`))
	if s, ok := a.String("action"); !ok || s != "get" {
		t.Errorf(`String("action") = %q, %v`, s, ok)
	}
	if _, ok := a.String("n"); ok {
		t.Error(`String("n") of a number said it is a string`)
	}
	if _, ok := a.String("none"); ok {
		t.Error(`String("none") of an absent argument said it is a string`)
	}
}

// TestTheCheckReadsNumbersAsJSONSchemaDoes: the schema checker gets each
// number as a float64 (an integer is one with no fraction: 2.0 is one),
// though the tab gets the host's digits; and an argument that was never
// decoded is refused, not passed.
func TestTheCheckReadsNumbersAsJSONSchemaDoes(t *testing.T) {
	a := mustCompile(t, `{"type":"object","properties":{"n":{"type":"integer","maximum":10},"l":{"type":"array","items":{"type":"number"}}}}`)
	for raw, ok := range map[string]bool{
		`{"n":2.0}`: true, `{"n":2.5}`: false, `{"n":11}`: false, `{"l":[1,2.5,-3e2]}`: true, `{"l":[1,"2"]}`: false,
	} {
		if err := a.check(decoded(t, raw)); (err == nil) != ok {
			t.Errorf("%s: %v, want passed %v", raw, err, ok)
		}
	}
	if err := a.check(Arguments{JSON: json.RawMessage(`{"n":2}`)}); err == nil {
		t.Error("arguments not from DecodeArguments passed the check")
	}
}
