package protocol

import (
	"regexp"
	"strings"
)

var templatePart = regexp.MustCompile(`\{([A-Za-z0-9_]+)\}`)

// Match reports whether uri is one of the template's resources, and the
// values of its {parts}. A part matches one path segment.
func (t ResourceTemplate) Match(uri string) (map[string]string, bool) {
	var re strings.Builder
	re.WriteString("^")
	last := 0
	var names []string
	for _, loc := range templatePart.FindAllStringSubmatchIndex(t.URITemplate, -1) {
		re.WriteString(regexp.QuoteMeta(t.URITemplate[last:loc[0]]))
		re.WriteString(`([^/?#]+)`)
		names = append(names, t.URITemplate[loc[2]:loc[3]])
		last = loc[1]
	}
	re.WriteString(regexp.QuoteMeta(t.URITemplate[last:]) + "$")
	m := regexp.MustCompile(re.String()).FindStringSubmatch(uri)
	if m == nil {
		return nil, false
	}
	vars := make(map[string]string, len(names))
	for i, n := range names {
		vars[n] = m[i+1]
	}
	return vars, true
}

// Fill puts vars into the {parts} of s; parts without a value stay.
func Fill(s string, vars map[string]string) string {
	return templatePart.ReplaceAllStringFunc(s, func(part string) string {
		if v, ok := vars[part[1:len(part)-1]]; ok {
			return v
		}
		return part
	})
}
