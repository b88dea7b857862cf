package oauth

import (
	"net"
	"net/url"
	"strings"
	"unicode"

	"golang.org/x/net/idna"
)

// The redirect host as the person is shown it (SPEC §5: hosts shown in
// ASCII). A registered redirect URI may name an internationalized host,
// and clаude.ai (a Cyrillic а) reads as claude.ai: the panel and the
// waiting page show its punycode, xn--clude-5ve.ai, and a label that
// mixes scripts is flagged, as look-alike names do.

// redirectHost is the host[:port] of a redirect URI as it is written.
func redirectHost(redirectURI string) string {
	if u, err := url.Parse(redirectURI); err == nil {
		return u.Host
	}
	return ""
}

// asciiHost is the host of a redirect URI as displayHost shows it.
func asciiHost(redirectURI string) string {
	h, _ := displayHost(redirectHost(redirectURI))
	return h
}

// displayHost is host (host[:port]) in ASCII, an internationalized name
// in punycode, and whether a label of its name mixes scripts. A name that
// is not valid IDNA is shown with '?' for each letter outside ASCII, and
// flagged.
func displayHost(host string) (string, bool) {
	name, port, err := net.SplitHostPort(host)
	if err != nil {
		name, port = host, ""
	}
	if strings.HasPrefix(name, "[") || net.ParseIP(name) != nil {
		return host, false
	}
	uni, err := idna.Punycode.ToUnicode(strings.ToLower(name))
	ascii := ""
	if err == nil {
		ascii, err = idna.Punycode.ToASCII(uni)
	}
	mixed := err != nil
	if err != nil {
		ascii = strings.Map(func(r rune) rune {
			if r > unicode.MaxASCII || unicode.IsControl(r) {
				return '?'
			}
			return r
		}, name)
	}
	for _, label := range strings.Split(uni, ".") {
		mixed = mixed || mixesScripts(label)
	}
	if port != "" {
		return net.JoinHostPort(ascii, port), mixed
	}
	return ascii, mixed
}

// mixesScripts reports whether label has letters of more than one script,
// Latin with Chinese, Japanese or Korean excepted (UTS #39's "highly
// restrictive" level).
func mixesScripts(label string) bool {
	seen := map[string]bool{}
	for _, r := range label {
		if s := scriptOf(r); s != "" {
			seen[s] = true
		}
	}
	if seen["CJK"] && seen["Latin"] {
		delete(seen, "Latin")
	}
	return len(seen) > 1
}

// scriptOf is r's script, the scripts of Chinese, Japanese and Korean as
// one ("CJK"); "" for characters of every script (digits, '-').
func scriptOf(r rune) string {
	for name, table := range unicode.Scripts {
		if !unicode.Is(table, r) {
			continue
		}
		switch name {
		case "Common", "Inherited":
			return ""
		case "Han", "Hiragana", "Katakana", "Hangul", "Bopomofo":
			return "CJK"
		}
		return name
	}
	return ""
}
