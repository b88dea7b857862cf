package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"testing"

	yaml "go.yaml.in/yaml/v2"
)

// parseYAML returns the documents of src (empty ones left out) as plain
// maps, lists and scalars. It reads with go.yaml.in/yaml/v2, strictly (a
// key twice is an error): a YAML 1.1 reader, as kubectl's sigs.k8s.io/yaml
// is, so an unquoted yes/no/on/off where Kubernetes wants a string reads
// as the boolean Kubernetes would see, and the tests catch it.
func parseYAML(file string, src []byte) ([]any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.SetStrict(true)
	var docs []any
	for {
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if doc == nil {
			continue
		}
		plain, err := stringKeys(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		docs = append(docs, plain)
	}
}

// stringKeys turns yaml.v2's map[any]any into map[string]any, all the way
// down; a key that is not a string (an unquoted number, yes, null) is an
// error, as JSON, and so Kubernetes, has none.
func stringKeys(v any) (any, error) {
	switch v := v.(type) {
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			s, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("key %v is %T, not a string", k, k)
			}
			var err error
			if out[s], err = stringKeys(e); err != nil {
				return nil, fmt.Errorf("%s: %w", s, err)
			}
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			var err error
			if out[i], err = stringKeys(e); err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
		}
		return out, nil
	}
	return v, nil
}

// TestParseYAML: the reading the manifest tests rely on: YAML 1.1 scalars
// (yes is a boolean, "yes" a string), documents split at ---, string keys,
// and a key twice refused.
func TestParseYAML(t *testing.T) {
	docs, err := parseYAML("test.yaml", []byte("a: 1\nh: yes\ni: \"yes\"\nl: [x, {k: v}]\n---\n---\nsecond: doc\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []any{
		map[string]any{"a": 1, "h": true, "i": "yes", "l": []any{"x", map[string]any{"k": "v"}}},
		map[string]any{"second": "doc"},
	}
	if !reflect.DeepEqual(docs, want) {
		t.Errorf("parsed %v, want %v", docs, want)
	}
	for name, bad := range map[string]string{"duplicate": "a: 1\na: 2\n", "number key": "1: a\n", "tab": "a:\n\tb: 1\n"} {
		if _, err := parseYAML(name, []byte(bad)); err == nil {
			t.Errorf("%s: %q parsed without an error", name, bad)
		}
	}
}
