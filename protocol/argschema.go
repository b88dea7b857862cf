package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// A call's arguments are checked against its tool's inputSchema before the
// call reaches a tab (issue 24 item 10): a host that sends {"title": 123},
// leaves out what is required, or adds what additionalProperties: false
// refuses gets -32602 with the schema's complaint, and the tab never runs
// it. The schema is compiled once, when the bundle is loaded (LoadBundle),
// by github.com/google/jsonschema-go (draft 2020-12, the MCP default, and
// draft-07).
//
// A schema is the bundle's, but its cost is bounded all the same, since an
// agent chooses the arguments it is checked against: a $ref that leads
// back to itself, or refs that fan out ({"anyOf": [{"$ref": "#/$defs/a"},
// {"$ref": "#/$defs/a"}]} a few dozen levels deep), make the checker's
// work grow without bound or exponentially (measured: 22 such levels took
// 3.5 minutes for one number). So a schema is refused at load when it is
// over maxSchemaBytes, when its refs are not local JSON pointers ("#/…"),
// when they form a cycle, or when it has more than maxSchemaParts parts
// with every $ref written out (its "parts": the most subschemas, enum
// values included, any one value of the arguments can be checked against).
// With no cycle, a check visits each pair of a part and a value of the
// arguments at most once, and a part reads a string at most a few times
// (a pattern, a length, an enum), so a call whose parts × (values +
// bytes) exceeds maxCheckWork is refused before it is checked: a schema
// of 2 parts takes arguments of up to 4 MiB (the request limit), one of
// 20 parts up to 450 KB.

// Limits of the argument check.
const (
	maxSchemaBytes = 64 << 10
	maxSchemaParts = 4_096
	// maxCheckWork bounds parts × (values + bytes) of one check: at most
	// about half a second of one core at its worst, a pattern in every
	// part (BenchmarkArgumentCheckAtTheBound measures it).
	maxCheckWork = 9_000_000
	// maxComplaint is the most characters of the checker's complaint a
	// host reads (Clip: then "…").
	maxComplaint = 600
)

// A call's arguments pass the check only within maxCheckWork bytes, so a
// checked call fits in one message to the tab, with room for the rest of
// the call: this does not compile when the limits part.
const _ = uint(MaxMessageBytes - maxCheckWork - 64<<10)

// argumentSchema is one tool's inputSchema, compiled.
type argumentSchema struct {
	resolved *jsonschema.Resolved
	parts    int
}

// compileArgumentSchema compiles a tool's inputSchema within the limits
// above.
func compileArgumentSchema(raw json.RawMessage) (*argumentSchema, error) {
	if len(raw) > maxSchemaBytes {
		return nil, fmt.Errorf("over %d bytes", maxSchemaBytes)
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return nil, err
	}
	root, _ := tree.(map[string]any)
	switch root["$schema"] {
	case nil, "https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema#":
	default:
		return nil, fmt.Errorf("$schema %v: only draft 2020-12 (the default) and draft-07 are checked", root["$schema"])
	}
	w := schemaWalk{root: tree, memo: map[string]int{}, open: map[string]bool{}}
	parts, err := w.parts(tree, "")
	if err != nil {
		return nil, err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	resolved, err := s.Resolve(nil) // no loader: a remote $ref is an error
	if err != nil {
		return nil, err
	}
	return &argumentSchema{resolved: resolved, parts: parts}, nil
}

// CheckArguments checks a call's arguments against the tool's
// inputSchema, compiled once by LoadBundle; the error is the complaint a
// host reads. A tool LoadBundle did not check has no compiled schema, and
// every call of it is refused: compiling it per call instead hid, for a
// day, that LoadBundle kept the compiled schemas on copies (issue 27: a
// fifth of the relay's CPU per call).
func (t *Tool) CheckArguments(args Arguments) error {
	if t.args == nil {
		return errors.New("the tool's inputSchema was not compiled (the tool did not come from LoadBundle)")
	}
	return t.args.check(args)
}

func (a *argumentSchema) check(args Arguments) error {
	if args.value == nil {
		return errors.New("the arguments were not decoded (DecodeArguments)")
	}
	if args.tooLarge != "" {
		return fmt.Errorf("the arguments hold a number %s, too large for a JSON Schema check", Clip(string(args.tooLarge), 40))
	}
	if size := args.values + len(args.JSON); size > maxCheckWork/a.parts {
		return fmt.Errorf("the arguments are too large for this tool's schema to be checked: "+
			"%s bytes and values, and it takes at most %s", formatCount(size), formatCount(maxCheckWork/a.parts))
	}
	err := a.resolved.Validate(args.value)
	if err == nil {
		return nil
	}
	msg := strings.TrimPrefix(err.Error(), "validating root: ")
	return errors.New(Clip(strings.Join(strings.Fields(msg), " "), maxComplaint))
}

// Keywords whose values are subschemas applied to the value itself or
// to its parts (JSON Schema 2020-12 and draft-07).
var (
	oneSchema   = []string{"additionalProperties", "additionalItems", "contains", "propertyNames", "not", "if", "then", "else", "unevaluatedItems", "unevaluatedProperties", "contentSchema"}
	schemaLists = []string{"allOf", "anyOf", "oneOf", "prefixItems", "items"}
	schemaMaps  = []string{"properties", "patternProperties", "dependentSchemas", "dependencies"}
	// Keywords whose lookups this walk does not follow; refused.
	dynamicKeywords = []string{"$dynamicRef", "$recursiveRef"}
)

// schemaWalk counts a schema's parts with every $ref written out, and
// finds refs it cannot follow or that form a cycle. Parts are memoized by
// their JSON pointer, so a shared definition is counted once per use, not
// walked once per use.
type schemaWalk struct {
	root any
	memo map[string]int
	open map[string]bool // the pointers being counted: one seen again is a cycle
}

func (w *schemaWalk) parts(node any, ptr string) (int, error) {
	if n, ok := w.memo[ptr]; ok {
		return n, nil
	}
	m, ok := node.(map[string]any)
	if !ok {
		return 1, nil // true or false; anything else the checker refuses
	}
	if w.open[ptr] {
		return 0, fmt.Errorf("#%s: its $ref leads back to itself (recursive schemas are not checked)", ptr)
	}
	w.open[ptr] = true
	defer delete(w.open, ptr)
	for _, k := range dynamicKeywords {
		if _, has := m[k]; has {
			return 0, fmt.Errorf("#%s: %s is not supported", ptr, k)
		}
	}
	if _, has := m["$id"]; has && ptr != "" {
		return 0, fmt.Errorf("#%s: $id is allowed at the root only", ptr)
	}
	total := 1
	if enum, ok := m["enum"].([]any); ok {
		total += len(enum)
	}
	var subs []sub
	if ref, ok := m["$ref"].(string); ok {
		target, at, err := w.pointer(ref)
		if err != nil {
			return 0, fmt.Errorf("#%s: %w", ptr, err)
		}
		subs = append(subs, sub{target, at})
	}
	subs = appendSubschemas(subs, m, ptr)
	for _, s := range subs {
		n, err := w.parts(s.node, s.ptr)
		if err != nil {
			return 0, err
		}
		if total += n; total > maxSchemaParts {
			return 0, fmt.Errorf("more than %d parts with every $ref written out", maxSchemaParts)
		}
	}
	w.memo[ptr] = total
	return total, nil
}

// sub is a subschema and its JSON pointer.
type sub struct {
	node any
	ptr  string
}

// appendSubschemas appends the subschemas of m (at ptr) that apply to
// the value or its parts; $defs are reached through refs only.
func appendSubschemas(subs []sub, m map[string]any, ptr string) []sub {
	for _, k := range oneSchema {
		if v, ok := m[k]; ok {
			subs = append(subs, sub{v, ptr + "/" + k})
		}
	}
	for _, k := range schemaLists {
		switch v := m[k].(type) {
		case []any:
			for i, x := range v {
				subs = append(subs, sub{x, ptr + "/" + k + "/" + strconv.Itoa(i)})
			}
		case map[string]any, bool: // items as one schema
			subs = append(subs, sub{v, ptr + "/" + k})
		}
	}
	for _, k := range schemaMaps {
		if v, ok := m[k].(map[string]any); ok {
			for name, x := range v {
				if _, list := x.([]any); !list { // draft-07 dependencies: a list of names is no schema
					subs = append(subs, sub{x, ptr + "/" + k + "/" + escapePointer(name)})
				}
			}
		}
	}
	return subs
}

// pointer finds what a local $ref ("#" or "#/…", a JSON pointer in a URI
// fragment) names in the root schema, and its canonical pointer.
func (w *schemaWalk) pointer(ref string) (any, string, error) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok || (frag != "" && !strings.HasPrefix(frag, "/")) {
		return nil, "", fmt.Errorf("$ref %q: only local refs (#/…) are checked", Clip(ref, 80))
	}
	frag, err := url.PathUnescape(frag)
	if err != nil {
		return nil, "", fmt.Errorf("$ref %q: %w", Clip(ref, 80), err)
	}
	node, at := w.root, ""
	for _, seg := range strings.Split(frag, "/")[1:] {
		seg = strings.NewReplacer("~1", "/", "~0", "~").Replace(seg)
		switch x := node.(type) {
		case map[string]any:
			node, ok = x[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			ok = err == nil && i >= 0 && i < len(x)
			if ok {
				node = x[i]
			}
		default:
			ok = false
		}
		if !ok {
			return nil, "", fmt.Errorf("$ref %q names nothing in the schema", Clip(ref, 80))
		}
		at += "/" + escapePointer(seg)
	}
	return node, at, nil
}

func escapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
