package protocol

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// decoded is args as DecodeArguments hands them to the check.
func decoded(t testing.TB, args string) Arguments {
	t.Helper()
	a, err := DecodeArguments(json.RawMessage(args))
	if err != nil {
		t.Fatalf("%.80s: %v", args, err)
	}
	return a
}

func mustCompile(t testing.TB, schema string) *argumentSchema {
	t.Helper()
	a, err := compileArgumentSchema(json.RawMessage(schema))
	if err != nil {
		t.Fatalf("%s: %v", schema, err)
	}
	return a
}

// TestArgumentCheckSaysTheSchemasComplaint: what the issue named (a
// number for a string, nothing where something is required, a property
// a closed schema does not declare) and the rest of what tools use.
func TestArgumentCheckSaysTheSchemasComplaint(t *testing.T) {
	a := mustCompile(t, `{"type":"object","properties":{"title":{"type":"string","maxLength":5},
		"n":{"type":"integer","minimum":1},"tags":{"type":"array","items":{"enum":["a","b"]}}},
		"required":["title"],"additionalProperties":false}`)
	for args, want := range map[string]string{
		`{"title":123}`:                  `/properties/title: type: 123 has type "integer", want "string"`,
		`{}`:                             `required: missing properties: ["title"]`,
		`{"title":"a","x":1}`:            `unexpected additional properties ["x"]`,
		`{"title":"abcdef"}`:             `maxLength`,
		`{"title":"a","n":1.5}`:          `want "integer"`,
		`{"title":"a","n":0}`:            `minimum`,
		`{"title":"a","tags":["a","c"]}`: `enum`,
		`{"title":"a","n":1e400}`:        `number 1e400, too large`,
	} {
		err := a.check(decoded(t, args))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a complaint with %q", args, err, want)
		}
	}
	for _, args := range []string{`{"title":"a"}`, `{"title":"abc","n":3,"tags":["b"]}`, `{"title":"a","n":2.0}`} {
		if err := a.check(decoded(t, args)); err != nil {
			t.Errorf("%s: %v", args, err)
		}
	}
}

// TestArgumentCheckClipsWhatItQuotes: the checker's complaint and a ref
// quoted in a refusal are cut (Clip), however long what they quote: a
// host reads at most maxComplaint characters of a complaint.
func TestArgumentCheckClipsWhatItQuotes(t *testing.T) {
	long := strings.Repeat("é", 2*maxComplaint)
	a := mustCompile(t, `{"type":"object","properties":{"a":{"const":"`+long+`"}}}`)
	err := a.check(decoded(t, `{"a":"x"}`))
	if err == nil || !strings.HasSuffix(err.Error(), "…") || utf8.RuneCountInString(err.Error()) != maxComplaint+1 {
		t.Errorf("a complaint quoting %d characters: %d characters: %v", 2*maxComplaint, utf8.RuneCountInString(fmt.Sprint(err)), err)
	}
	ref := "https://example.com/" + long
	_, err = compileArgumentSchema(json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"` + ref + `"}}}`))
	if err == nil || strings.Contains(err.Error(), ref[:200]) || !strings.Contains(err.Error(), ref[:40]) || !strings.Contains(err.Error(), "…") {
		t.Errorf("a ref of %d characters quoted whole or not at all: %v", len(ref), err)
	}
}

// fanOut is a schema whose refs fan out: each level's anyOf names the
// next level twice, so written out it has 2^levels parts.
func fanOut(levels int) string {
	defs := map[string]any{}
	for i := range levels {
		next := map[string]any{"$ref": fmt.Sprintf("#/$defs/d%d", i+1)}
		defs[fmt.Sprintf("d%d", i)] = map[string]any{"anyOf": []any{next, next}}
	}
	defs[fmt.Sprintf("d%d", levels)] = map[string]any{"type": "string"}
	b, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"$ref": "#/$defs/d0"}}, "$defs": defs})
	return string(b)
}

// TestHostileSchemasAreRefusedAtLoad: a schema whose check could grow
// without bound is refused when the bundle loads, saying why: refs that
// fan out (22 levels took the checker 3.5 minutes for one number), a ref
// cycle, refs the walk cannot follow, a schema too large.
func TestHostileSchemasAreRefusedAtLoad(t *testing.T) {
	for schema, want := range map[string]string{
		fanOut(22): "more than 4096 parts",
		`{"type":"object","properties":{"a":{"$ref":"#"}}}`:                                                                     "leads back to itself",
		`{"type":"object","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"properties":{"x":{"$ref":"#/$defs/a"}}}`: "leads back to itself",
		`{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`:                                            "only local refs",
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`:                                                       "names nothing",
		`{"type":"object","properties":{"a":{"$dynamicRef":"#x"}}}`:                                                             "$dynamicRef is not supported",
		`{"type":"object","properties":{"a":{"$id":"https://example.com/a","type":"string"}}}`:                                  "$id is allowed at the root only",
		`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object"}`:                                                 "only draft 2020-12",
		`{"type":"object","description":"` + strings.Repeat("x", maxSchemaBytes) + `"}`:                                         "over 65536 bytes",
		`{"type":"object","properties":{"a":{"pattern":"("}}}`:                                                                  "pattern",
	} {
		if _, err := compileArgumentSchema(json.RawMessage(schema)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.120s: %v, want an error with %q", schema, err, want)
		}
	}
	// A fan-out within the limit loads, and is checked.
	a := mustCompile(t, fanOut(10))
	if a.parts < 1<<10 {
		t.Fatalf("fan-out of 10 levels counted %d parts", a.parts)
	}
	if err := a.check(decoded(t, `{"x":5}`)); err == nil {
		t.Fatal("5 passed a schema of strings")
	}
	if err := a.check(decoded(t, `{"x":"s"}`)); err != nil {
		t.Fatal(err)
	}
}

// TestArgumentsTooLargeForTheSchemaAreRefusedUnchecked: parts × (values +
// bytes) over maxCheckWork is refused before the checker runs.
func TestArgumentsTooLargeForTheSchemaAreRefusedUnchecked(t *testing.T) {
	a := mustCompile(t, fanOut(10))
	args := `{"x":"` + strings.Repeat("s", maxCheckWork/a.parts) + `"}`
	if err := a.check(decoded(t, args)); err == nil || !strings.Contains(err.Error(), "too large for this tool's schema to be checked") {
		t.Fatalf("%d bytes against %d parts: %v", len(args), a.parts, err)
	}
	// The request limit's worth of text, for a plain schema.
	a = mustCompile(t, `{"type":"object","properties":{"text":{"type":"string"}}}`)
	if err := a.check(decoded(t, `{"text":"`+strings.Repeat("s", 4<<20-20)+`"}`)); err != nil {
		t.Fatalf("4 MiB of text: %v", err)
	}
}

// BenchmarkArgumentCheckAtTheBound checks arguments at maxCheckWork
// against the worst schemas the limits let in: a fan-out that every
// value is checked against in full (each value fails every branch), of
// numbers against strings, and of one long string against patterns. It
// is what one call can cost the relay at most.
func BenchmarkArgumentCheckAtTheBound(b *testing.B) {
	for _, tc := range []struct{ name, leaf, value string }{
		{"values", `{"type":"string"}`, "0"},
		{"pattern", `{"type":"string","pattern":"x$"}`, "s"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			schema := strings.Replace(fanOut(9), `{"type":"string"}`, tc.leaf, 1)
			schema = strings.Replace(schema, `"properties":{"x":{"$ref":"#/$defs/d0"}}`,
				`"properties":{"x":{"type":"array","items":{"$ref":"#/$defs/d0"}}}`, 1)
			a := mustCompile(b, schema)
			budget := maxCheckWork/a.parts - 16
			var args json.RawMessage
			if tc.name == "values" {
				args = json.RawMessage(`{"x":[` + strings.TrimSuffix(strings.Repeat("0,", budget/3), ",") + `]}`)
			} else {
				args = json.RawMessage(`{"x":["` + strings.Repeat("s", budget-3) + `"]}`)
			}
			for b.Loop() {
				if err := a.check(decoded(b, string(args))); err == nil || strings.Contains(err.Error(), "too large") {
					b.Fatalf("%d bytes passed, or were refused unchecked: %v", len(args), err)
				}
			}
			b.ReportMetric(float64(a.parts), "parts")
		})
	}
}

// TestLoadBundleKeepsEachToolsCompiledSchema: a loaded bundle's tools
// hold their compiled inputSchema, so a call's check does not compile it
// again (it once compiled on a copy of each tool and dropped it: a fifth
// of the relay's CPU per call went to compiling the schema for the call).
func TestLoadBundleKeepsEachToolsCompiledSchema(t *testing.T) {
	b := ProbeBundle()
	for i := range b.Tools {
		if b.Tools[i].args == nil {
			t.Errorf("%s: its inputSchema is not kept compiled", b.Tools[i].Name)
		}
	}
	echo, ok := b.Tool("echo")
	if !ok {
		t.Fatal("the probe bundle has no echo tool")
	}
	args := decoded(t, `{"value":"hi"}`)
	if err := echo.CheckArguments(args); err != nil {
		t.Fatalf("a loaded echo refuses %s: %v", args.JSON, err)
	}
	if n := testing.AllocsPerRun(20, func() { _ = echo.CheckArguments(args) }); n > 40 {
		t.Errorf("a check of %s allocates %.0f times: is its schema compiled for the call?", args.JSON, n)
	}
	unloaded := Tool{Name: "echo", InputSchema: echo.InputSchema}
	if err := unloaded.CheckArguments(args); err == nil {
		t.Error("a tool LoadBundle never checked passed the argument check: its schema would be compiled per call")
	}
}
