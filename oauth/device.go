package oauth

import "strings"

// deviceOf names the browser family and system a User-Agent claims, like
// "Chrome on Linux", from a fixed vocabulary (the header itself is never
// shown: anyone may send any): "" when it names neither. The Connect
// panel shows it for a typed code, as a hint of where the request
// started: a User-Agent can lie, and says nothing of who holds it.
func deviceOf(ua string) string {
	browser, system := firstOf(ua, browsers), firstOf(ua, systems)
	switch {
	case browser != "" && system != "":
		return browser + " on " + system
	case browser != "":
		return browser
	case system != "":
		return "a program on " + system
	}
	return ""
}

// A name and the User-Agent tokens that say it, in the order to try:
// Edge and Opera claim Chrome too, Chrome claims Safari, iOS and Android
// claim macOS and Linux.
type uaToken struct{ name, token string }

var browsers = []uaToken{
	{"Edge", "Edg/"}, {"Edge", "EdgA/"}, {"Edge", "EdgiOS/"}, {"Opera", "OPR/"}, {"Samsung Internet", "SamsungBrowser/"},
	{"Firefox", "Firefox/"}, {"Firefox", "FxiOS/"}, {"Chrome", "CriOS/"}, {"Chromium", "Chromium/"}, {"Chrome", "Chrome/"},
	{"Safari", "Safari/"},
}

var systems = []uaToken{
	{"iOS", "iPhone"}, {"iOS", "iPad"}, {"Android", "Android"}, {"ChromeOS", "CrOS"}, {"Windows", "Windows"},
	{"macOS", "Macintosh"}, {"Linux", "Linux"},
}

func firstOf(ua string, list []uaToken) string {
	for _, t := range list {
		if strings.Contains(ua, t.token) {
			return t.name
		}
	}
	return ""
}
