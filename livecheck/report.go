package livecheck

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Status is a check's outcome.
type Status string

// The outcomes: a check that could not run because one it needs did not
// pass is skipped, and says which.
const (
	Pass Status = "PASS"
	Fail Status = "FAIL"
	Skip Status = "SKIP"
)

// Result is one check's line.
type Result struct {
	Name   string
	Status Status
	Why    string
}

// reporter prints the lines, every one through redact.
type reporter struct {
	out     io.Writer
	verbose bool
	mu      sync.Mutex // guards the fields below
	secrets []string   // every secret the run handled, longest first
	results []Result
}

// secret makes s a value no line may show.
func (r *reporter) secret(s string) {
	if len(s) < 6 {
		return // too short to be one of ours; replacing it would garble words
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secrets = append(r.secrets, s)
	sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
}

// Patterns redacted whatever the run registered: the relay's token and
// code prefixes (oauth/secrets.go), and URL parameters that carry secrets.
var (
	tokenPattern = regexp.MustCompile(`\btr[arc]_[A-Za-z0-9_-]+`)
	paramPattern = regexp.MustCompile(`((?:code|state|code_verifier|code_challenge|refresh_token|access_token|token|subject_token|tabrelay-connect)=)[^&\s"'<>]+`)
)

// redact removes every secret from s and makes it one line.
func (r *reporter) redact(s string) string {
	r.mu.Lock()
	for _, v := range r.secrets {
		s = strings.ReplaceAll(s, v, "…")
	}
	r.mu.Unlock()
	s = tokenPattern.ReplaceAllString(s, "…")
	s = paramPattern.ReplaceAllString(s, "$1…")
	return strings.Join(strings.Fields(s), " ")
}

// emit prints one check's line.
func (r *reporter) emit(res Result) {
	res.Why = r.redact(res.Why)
	r.mu.Lock()
	r.results = append(r.results, res)
	r.mu.Unlock()
	fmt.Fprintf(r.out, "%s %s — %s\n", res.Status, res.Name, res.Why)
}

// debugf prints a detail line with -v.
func (r *reporter) debugf(format string, args ...any) {
	if r.verbose {
		fmt.Fprintf(r.out, "  · %s\n", r.redact(fmt.Sprintf(format, args...)))
	}
}

// summary is the last line: the counts.
func (r *reporter) summary() (line string, failed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := map[Status]int{}
	for _, res := range r.results {
		n[res.Status]++
	}
	return fmt.Sprintf("live-check: %d passed, %d failed, %d skipped", n[Pass], n[Fail], n[Skip]), n[Fail] > 0
}

// clip shortens s (a sentence quoted in a line) to n runes.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
