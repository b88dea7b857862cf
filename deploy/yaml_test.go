package deploy

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The module requires no YAML library, so the tests read deploy/'s YAML
// with this parser of the block-style subset those files use: mappings,
// sequences (also "key:" followed by "- " at the key's indentation),
// plain, quoted and flow ([…], {…}) scalars on one line, literal (|) and
// folded (>) block scalars, comments and "---" between documents. Plain
// scalars resolve as kubectl's YAML 1.1 reader does (yes/no/on/off are
// booleans), so an unquoted "yes" where Kubernetes wants a string is
// caught. Anchors, aliases, tags and multi-line plain scalars are refused:
// a file that needs them fails the tests loudly rather than being misread.

type yamlLine struct {
	no     int    // 1-based line number in the file
	raw    string // the line as written
	indent int    // leading spaces
	text   string // without indentation and comment; "" for a blank or comment line
}

type yamlParser struct {
	file  string
	lines []yamlLine
	pos   int
}

// parseYAML returns the documents of src (empty documents left out).
func parseYAML(file, src string) ([]any, error) {
	var docs []any
	var cur []yamlLine
	flush := func() error {
		p := &yamlParser{file: file, lines: cur}
		cur = nil
		if _, ok := p.peek(); !ok {
			return nil
		}
		v, err := p.node(0)
		if err != nil {
			return err
		}
		if i, ok := p.peek(); ok {
			return p.errf(i, "unexpected line (wrong indentation?)")
		}
		docs = append(docs, v)
		return nil
	}
	for n, raw := range strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n") {
		raw = strings.TrimRight(raw, " ")
		if raw == "---" || strings.HasPrefix(raw, "--- ") || raw == "..." {
			if err := flush(); err != nil {
				return nil, err
			}
			continue
		}
		body := strings.TrimLeft(raw, " ")
		if strings.HasPrefix(body, "\t") {
			return nil, fmt.Errorf("%s:%d: a tab in the indentation", file, n+1)
		}
		cur = append(cur, yamlLine{no: n + 1, raw: raw, indent: len(raw) - len(body), text: stripComment(body)})
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return docs, nil
}

func (p *yamlParser) errf(i int, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", p.file, p.lines[i].no, fmt.Sprintf(format, args...))
}

// peek skips blank and comment lines and returns the next line's index.
func (p *yamlParser) peek() (int, bool) {
	for p.pos < len(p.lines) && p.lines[p.pos].text == "" {
		p.pos++
	}
	return p.pos, p.pos < len(p.lines)
}

// node reads the node whose lines are indented at least min (nil if none).
func (p *yamlParser) node(min int) (any, error) {
	i, ok := p.peek()
	if !ok || p.lines[i].indent < min {
		return nil, nil
	}
	ln := p.lines[i]
	if isSeqItem(ln.text) {
		return p.seq(ln.indent)
	}
	if _, _, ok, err := mapEntry(ln.text); err != nil {
		return nil, p.errf(i, "%v", err)
	} else if ok {
		return p.mapping(ln.indent)
	}
	p.pos = i + 1
	return p.value(i, ln.text)
}

func (p *yamlParser) mapping(indent int) (any, error) {
	m := map[string]any{}
	for {
		i, ok := p.peek()
		if !ok || p.lines[i].indent < indent {
			return m, nil
		}
		ln := p.lines[i]
		if ln.indent > indent {
			return nil, p.errf(i, "unexpected indentation")
		}
		key, rest, ok, err := mapEntry(ln.text)
		if err != nil {
			return nil, p.errf(i, "%v", err)
		}
		if !ok {
			if isSeqItem(ln.text) {
				return nil, p.errf(i, "a sequence item where a key was expected")
			}
			return nil, p.errf(i, "not a key: value line: %q", ln.text)
		}
		if _, dup := m[key]; dup {
			return nil, p.errf(i, "duplicate key %q", key)
		}
		p.pos = i + 1
		var v any
		if rest == "" {
			j, ok := p.peek()
			switch {
			case ok && p.lines[j].indent > indent:
				v, err = p.node(indent + 1)
			case ok && p.lines[j].indent == indent && isSeqItem(p.lines[j].text):
				v, err = p.seq(indent)
			}
		} else {
			v, err = p.value(i, rest)
		}
		if err != nil {
			return nil, err
		}
		m[key] = v
	}
}

func (p *yamlParser) seq(indent int) (any, error) {
	s := []any{}
	for {
		i, ok := p.peek()
		if !ok || p.lines[i].indent < indent || !isSeqItem(p.lines[i].text) {
			return s, nil
		}
		ln := p.lines[i]
		if ln.indent > indent {
			return nil, p.errf(i, "unexpected indentation")
		}
		rest := strings.TrimLeft(ln.text[1:], " ")
		_, _, isMap, err := mapEntry(rest)
		if err != nil {
			return nil, p.errf(i, "%v", err)
		}
		var v any
		switch {
		case rest == "":
			p.pos = i + 1
			v, err = p.node(indent + 1)
		case isMap || isSeqItem(rest):
			// "- key: value": the item is a node starting at rest's column.
			off := len(ln.text) - len(rest)
			p.lines[i].indent, p.lines[i].text = indent+off, rest
			v, err = p.node(indent + off)
		default:
			p.pos = i + 1
			v, err = p.value(i, rest)
		}
		if err != nil {
			return nil, err
		}
		s = append(s, v)
	}
}

// value reads the value written after "key:" or "-" on line i: a block
// scalar (whose lines follow), or a scalar on the line itself.
func (p *yamlParser) value(i int, s string) (any, error) {
	if s[0] != '|' && s[0] != '>' {
		v, err := yamlScalar(s)
		if err != nil {
			return nil, p.errf(i, "%v", err)
		}
		return v, nil
	}
	chomp := byte(0)
	for _, c := range s[1:] {
		switch c {
		case '-', '+':
			chomp = byte(c)
		default:
			return nil, p.errf(i, "block scalar header %q: only |, >, |-, |+, >-, >+ are supported", s)
		}
	}
	parent := p.lines[i].indent
	var body []string
	blockIndent := -1
	for ; p.pos < len(p.lines); p.pos++ {
		ln := p.lines[p.pos]
		if strings.TrimSpace(ln.raw) == "" {
			body = append(body, "")
			continue
		}
		if ln.indent <= parent {
			break
		}
		if blockIndent < 0 {
			blockIndent = ln.indent
		}
		if ln.indent < blockIndent {
			return nil, p.errf(p.pos, "block scalar line indented less than its first line")
		}
		body = append(body, ln.raw[blockIndent:])
	}
	trailing := 0
	for len(body) > 0 && body[len(body)-1] == "" {
		body, trailing = body[:len(body)-1], trailing+1
	}
	var out string
	if s[0] == '|' {
		out = strings.Join(body, "\n")
	} else {
		var b strings.Builder
		for k, l := range body {
			switch {
			case k == 0:
			case l == "" || body[k-1] == "":
				b.WriteString("\n")
			default:
				b.WriteString(" ")
			}
			b.WriteString(l)
		}
		out = b.String()
	}
	switch {
	case len(body) == 0:
	case chomp == '-':
	case chomp == '+':
		out += strings.Repeat("\n", 1+trailing)
	default:
		out += "\n"
	}
	return out, nil
}

func isSeqItem(t string) bool { return t == "-" || strings.HasPrefix(t, "- ") }

// mapEntry splits "key: rest" (or "key:"); ok is false for anything else.
func mapEntry(t string) (key, rest string, ok bool, err error) {
	if t == "" || t[0] == '[' || t[0] == '{' || isSeqItem(t) {
		return "", "", false, nil
	}
	if t[0] == '"' || t[0] == '\'' {
		end := closingQuote(t)
		if end < 0 {
			return "", "", false, fmt.Errorf("unclosed quote in %q", t)
		}
		after := t[end+1:]
		if after != ":" && !strings.HasPrefix(after, ": ") {
			return "", "", false, nil
		}
		k, err := yamlScalar(t[:end+1])
		if err != nil {
			return "", "", false, err
		}
		return k.(string), strings.TrimSpace(after[1:]), true, nil
	}
	if k := strings.Index(t, ": "); k >= 0 {
		return strings.TrimSpace(t[:k]), strings.TrimSpace(t[k+2:]), true, nil
	}
	if strings.HasSuffix(t, ":") {
		return strings.TrimSpace(t[:len(t)-1]), "", true, nil
	}
	return "", "", false, nil
}

// closingQuote returns the index of the quote that closes the one at s[0].
func closingQuote(s string) int {
	q := s[0]
	for i := 1; i < len(s); i++ {
		switch {
		case q == '"' && s[i] == '\\':
			i++
		case s[i] == q && q == '\'' && i+1 < len(s) && s[i+1] == '\'':
			i++
		case s[i] == q:
			return i
		}
	}
	return -1
}

// stripComment drops a comment: "#" at the start or after a blank, outside quotes.
func stripComment(s string) string {
	var q byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case q != 0:
			if q == '"' && c == '\\' {
				i++
			} else if c == q {
				q = 0
			}
		case (c == '"' || c == '\'') && (i == 0 || strings.ContainsRune(" [{,:-", rune(s[i-1]))):
			q = c
		case c == '#' && (i == 0 || s[i-1] == ' '):
			return strings.TrimRight(s[:i], " ")
		}
	}
	return s
}

var (
	yamlInt  = regexp.MustCompile(`^[-+]?[0-9]+$`)
	yamlBool = map[string]bool{
		"true": true, "True": true, "TRUE": true, "yes": true, "Yes": true, "YES": true, "on": true, "On": true, "ON": true,
		"false": false, "False": false, "FALSE": false, "no": false, "No": false, "NO": false, "off": false, "Off": false, "OFF": false,
	}
)

// yamlScalar reads a scalar written on one line.
func yamlScalar(s string) (any, error) {
	switch s[0] {
	case '"':
		if closingQuote(s) != len(s)-1 {
			return nil, fmt.Errorf("text after a quoted string: %q", s)
		}
		v, err := strconv.Unquote(s)
		if err != nil {
			return nil, fmt.Errorf("double-quoted string %s: %v", s, err)
		}
		return v, nil
	case '\'':
		if closingQuote(s) != len(s)-1 {
			return nil, fmt.Errorf("text after a quoted string: %q", s)
		}
		return strings.ReplaceAll(s[1:len(s)-1], "''", "'"), nil
	case '[', '{':
		closing := map[byte]byte{'[': ']', '{': '}'}[s[0]]
		if s[len(s)-1] != closing {
			return nil, fmt.Errorf("unclosed flow collection %q (one line only)", s)
		}
		items, err := splitFlow(s[1 : len(s)-1])
		if err != nil {
			return nil, err
		}
		if s[0] == '[' {
			out := []any{}
			for _, it := range items {
				v, err := yamlScalar(it)
				if err != nil {
					return nil, err
				}
				out = append(out, v)
			}
			return out, nil
		}
		out := map[string]any{}
		for _, it := range items {
			k, rest, ok, err := mapEntry(it)
			if err != nil || !ok {
				return nil, fmt.Errorf("flow mapping entry %q is not key: value", it)
			}
			var v any
			if rest != "" {
				if v, err = yamlScalar(rest); err != nil {
					return nil, err
				}
			}
			out[k] = v
		}
		return out, nil
	case '&', '*', '!', '%', '@', '`', '|', '>':
		return nil, fmt.Errorf("unsupported YAML (anchor, alias, tag or reserved indicator): %q", s)
	}
	switch {
	case s == "~" || s == "null" || s == "Null" || s == "NULL":
		return nil, nil
	case yamlInt.MatchString(s):
		if n, err := strconv.Atoi(s); err == nil {
			return n, nil
		}
	}
	if b, ok := yamlBool[s]; ok {
		return b, nil
	}
	return s, nil
}

// splitFlow splits the inside of […] or {…} at its top-level commas.
func splitFlow(s string) ([]string, error) {
	var out []string
	depth, start := 0, 0
	var q byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case q != 0:
			if q == '"' && c == '\\' {
				i++
			} else if c == q {
				q = 0
			}
		case c == '"' || c == '\'':
			q = c
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		case c == ',' && depth == 0:
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	if q != 0 || depth != 0 {
		return nil, fmt.Errorf("unbalanced flow collection %q", s)
	}
	if last := strings.TrimSpace(s[start:]); last != "" {
		out = append(out, last)
	}
	for _, it := range out {
		if it == "" {
			return nil, fmt.Errorf("empty item in flow collection %q", s)
		}
	}
	return out, nil
}

func TestYAMLSubsetParser(t *testing.T) {
	src := `# a comment
a: 1
b: "two: 2" # trailing comment
c: 'it''s'
url: https://example.com/x#anchor
d:
  - x
  - k: v
    l: [1, "two", three]
  -
    deep: {}
  - - nested
e:
- same-indent
f: |
  line one
    indented # not a comment

  last
g: >-
  folded
  text
h: yes
i: "yes"
j:
k: ~
---
second: doc
`
	docs, err := parseYAML("test.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{
		map[string]any{
			"a": 1, "b": "two: 2", "c": "it's", "url": "https://example.com/x#anchor",
			"d": []any{"x", map[string]any{"k": "v", "l": []any{1, "two", "three"}},
				map[string]any{"deep": map[string]any{}}, []any{"nested"}},
			"e": []any{"same-indent"},
			"f": "line one\n  indented # not a comment\n\nlast\n",
			"g": "folded text",
			"h": true, "i": "yes", "j": nil, "k": nil,
		},
		map[string]any{"second": "doc"},
	}
	if !reflect.DeepEqual(docs, want) {
		t.Errorf("parsed\n%#v\nwant\n%#v", docs, want)
	}

	for name, bad := range map[string]string{
		"tab":           "a:\n\tb: 1\n",
		"indentation":   "a: 1\n  b: 2\n",
		"duplicate":     "a: 1\na: 2\n",
		"not a key":     "a: 1\njust text\n",
		"unclosed":      "a: \"open\n",
		"anchor":        "a: &x 1\n",
		"after quote":   "a: \"x\" y\n",
		"flow unclosed": "a: [1, 2\n",
	} {
		if _, err := parseYAML(name, bad); err == nil {
			t.Errorf("%s: %q parsed without an error", name, bad)
		}
	}
}
