package oauth

import "testing"

// Hosts are shown in ASCII, and a label that mixes scripts is flagged
// (issue 23: clаude.ai, with a Cyrillic а, was shown as it is).
func TestDisplayHost(t *testing.T) {
	for _, c := range []struct {
		host, want string
		mixed      bool
	}{
		{"claude.ai", "claude.ai", false},
		{"Claude.AI", "claude.ai", false},
		{"cl\u0430ude.ai", "xn--clude-5ve.ai", true},                            // Cyrillic а among Latin letters
		{"xn--clude-5ve.ai", "xn--clude-5ve.ai", true},                          // the same, registered in punycode
		{"m\u00fcnchen.de:8443", "xn--mnchen-3ya.de:8443", false},               // one script: ASCII, not flagged
		{"\u0441\u0430\u0439\u0442.\u0440\u0444", "xn--80aswg.xn--p1ai", false}, // all Cyrillic
		{"sony\u65e5\u672c.jp", "xn--sony-j79hm9d.jp", false},                   // Latin with Han is usual
		{"127.0.0.1:33418", "127.0.0.1:33418", false},
		{"[::1]:3000", "[::1]:3000", false},
	} {
		got, mixed := displayHost(c.host)
		if got != c.want || mixed != c.mixed {
			t.Errorf("displayHost(%q) = %q, %v; want %q, %v", c.host, got, mixed, c.want, c.mixed)
		}
	}
}

// The device a request started on is named from a fixed vocabulary.
func TestDeviceOf(t *testing.T) {
	for ua, want := range map[string]string{
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36":                           "Chrome on Linux",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36 Edg/131.0":                   "Edge on Windows",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1": "Safari on iOS",
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 14.0; rv:131.0) Gecko/20100101 Firefox/131.0":                                                     "Firefox on macOS",
		"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Mobile Safari/537.36":                       "Chrome on Android",
		"curl/8.5.0":                   "",
		"python-requests/2.31 (Linux)": "a program on Linux",
		"<script>alert(1)</script>":    "",
	} {
		if got := deviceOf(ua); got != want {
			t.Errorf("deviceOf(%q) = %q, want %q", ua, got, want)
		}
	}
}
