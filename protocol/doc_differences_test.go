package protocol_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// neverDone registers each thing section 19 of docs/tab-protocol.md may
// say this build never does (or cannot do), by a phrase of its bullet,
// with the code that would do it: a pattern of the relay's Go sources
// (tests and the protocol package's own definitions aside). Some phrases
// are of bullets the section no longer has, because the code does them
// now: written again, they fail.
var neverDone = []struct {
	phrase string
	doing  *regexp.Regexp
}{
	{"never sends it", regexp.MustCompile(`\bprotocol\.TypeScope\b`)},
	{"4102 (`forgotten`) is reserved but never sent", regexp.MustCompile(`\bprotocol\.CloseForgotten\b`)},
	{"4006 (`internal`) is defined but never sent", regexp.MustCompile(`\bprotocol\.CloseInternal\b`)},
	{"never on its own", regexp.MustCompile(`\bfunc \(s \*Server\) PushConnections\(`)},
	{"cannot learn who asks", regexp.MustCompile(`\bprotocol\.ConnectInfoRequest\b`)},
}

// TestDocDifferencesNameNothingTheCodeDoes (issue 25 item 7): the closing
// list of docs/tab-protocol.md said that connections are never pushed and
// that the tab cannot learn who asks, long after both were built. Each
// bullet of section 19 that says "never" or "cannot" must be one
// neverDone knows, and the code must not do what it names.
func TestDocDifferencesNameNothingTheCodeDoes(t *testing.T) {
	raw, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	sources := relaySources(t)
	for _, bullet := range differences(t, string(raw)) {
		claims := regexp.MustCompile(`\b(never|cannot)\b`).MatchString(bullet)
		known := false
		for _, n := range neverDone {
			if !strings.Contains(bullet, n.phrase) {
				continue
			}
			known = true
			for path, src := range sources {
				if loc := n.doing.FindStringIndex(src); loc != nil {
					line := strings.Count(src[:loc[0]], "\n") + 1
					t.Errorf("%s section 19 says %q, but %s:%d does it (%s)", docPath, oneLine(bullet), path, line, n.doing)
				}
			}
		}
		if claims && !known {
			t.Errorf("%s section 19 says %q: register what the code would do in neverDone, so that the claim is checked", docPath, oneLine(bullet))
		}
	}
}

// differences returns the bullets of section 19, each with its
// continuation lines.
func differences(t *testing.T, doc string) []string {
	_, rest, ok := strings.Cut(doc, "\n## 19. ")
	if !ok {
		t.Fatalf("%s has no section 19", docPath)
	}
	if end := strings.Index(rest, "\n## "); end >= 0 {
		rest = rest[:end]
	}
	var out []string
	for _, line := range strings.Split(rest, "\n") {
		switch {
		case strings.HasPrefix(line, "- "):
			out = append(out, line[2:])
		case strings.HasPrefix(line, "  ") && len(out) > 0:
			out[len(out)-1] += "\n" + line
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s section 19 has no bullets", docPath)
	}
	return out
}

// relaySources reads the relay's Go sources by path: every .go file of the
// module but tests, the protocol package (it defines what the others
// send) and the web tree.
func relaySources(t *testing.T) map[string]string {
	out := map[string]string{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "web" || d.Name() == "protocol" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		out[path] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
