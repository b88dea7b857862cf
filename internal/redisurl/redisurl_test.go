package redisurl

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, raw string
		check     func(t *testing.T, u URL)
	}{
		{"one server", "redis://127.0.0.1:6379/2", func(t *testing.T, u URL) {
			o := u.Options
			if u.Shape != Single || !slices.Equal(o.Addrs, []string{"127.0.0.1:6379"}) || o.DB != 2 || o.TLSConfig != nil || o.IsClusterMode {
				t.Fatalf("%+v", o)
			}
		}},
		{"one server, TLS, user", "rediss://relay:p%40ss@redis.example:6380", func(t *testing.T, u URL) {
			o := u.Options
			if u.Shape != Single || o.TLSConfig == nil || o.Username != "relay" || o.Password != "p@ss" || o.DB != 0 {
				t.Fatalf("%+v", o)
			}
		}},
		{"sentinel", "redis+sentinel://:pw@10.0.0.1:26379,10.0.0.2:26379,10.0.0.3:26379/mymaster/1?sentinel_password=spw&dial_timeout=2s",
			func(t *testing.T, u URL) {
				o := u.Options
				if u.Shape != Sentinel || o.MasterName != "mymaster" || o.DB != 1 || len(o.Addrs) != 3 || o.Password != "pw" ||
					o.SentinelPassword != "spw" || o.DialTimeout != 2*time.Second || o.IsClusterMode {
					t.Fatalf("%+v", o)
				}
			}},
		{"sentinel without db", "rediss+sentinel://s1:26379/m", func(t *testing.T, u URL) {
			if u.Shape != Sentinel || u.Options.MasterName != "m" || u.Options.TLSConfig == nil {
				t.Fatalf("%+v", u.Options)
			}
		}},
		{"cluster", "redis+cluster://u:pw@n1:7000,n2:7001?pool_size=20&read_timeout=500ms", func(t *testing.T, u URL) {
			o := u.Options
			if u.Shape != Cluster || !o.IsClusterMode || len(o.Addrs) != 2 || o.PoolSize != 20 || o.ReadTimeout != 500*time.Millisecond ||
				o.Username != "u" || o.Password != "pw" {
				t.Fatalf("%+v", o)
			}
		}},
		{"default ports", "redis+sentinel://s1,s2:26380/m", func(t *testing.T, u URL) {
			if !slices.Equal(u.Options.Addrs, []string{"s1:26379", "s2:26380"}) {
				t.Fatalf("%v", u.Options.Addrs)
			}
		}},
		{"default port", "redis://redis/0", func(t *testing.T, u URL) {
			if !slices.Equal(u.Options.Addrs, []string{"redis:6379"}) {
				t.Fatalf("%v", u.Options.Addrs)
			}
		}},
		{"cluster of one seed", "rediss+cluster://n1:7000/", func(t *testing.T, u URL) {
			if u.Shape != Cluster || !u.Options.IsClusterMode || u.Options.TLSConfig == nil {
				t.Fatalf("%+v", u.Options)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := Parse(tt.raw)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, u)
		})
	}
}

// TestParseRefusesInOneLineWithoutThePassword: a bad URL is refused with
// one line that names what is wrong and never repeats the password, also
// when the password's own characters break the URL apart.
func TestParseRefusesInOneLineWithoutThePassword(t *testing.T) {
	const pw = "Sup3rS3cret"
	tests := []struct{ raw, want string }{
		{"localhost:6379", "not a Redis URL"},
		{"http://u:" + pw + "@h:1", "scheme \"http\""},
		{"redis://u:" + pw + "@h:x", "host:port"},
		{"redis://u:" + pw + "@h:1,", "host:port"},
		{"redis://:" + pw, "host:port"},
		{"redis://u:" + pw + "@h:1,h:2", "redis+cluster://"},
		{"redis://u:" + pw + "@h:1/x", "database"},
		{"redis://u:" + pw + "@h:1/1/2", "nothing more"},
		{"redis://u:ab/" + pw + "@h:1", "percent-encode"},
		{"redis://u:ab?" + pw + "@h:1", "percent-encode"},
		{"redis://u:ab#" + pw + "@h:1", "percent-encode"},
		{"redis+sentinel://u:" + pw + "@s:26379", "MASTER"},
		{"redis+sentinel://u:" + pw + "@s:26379/m/x", "database"},
		{"redis+cluster://u:" + pw + "@n:7000/0", "no path"},
		{"redis+cluster://u:" + pw + "@n:7000?sentinel_password=" + pw, "redis+sentinel:// URLs only"},
		{"redis://u:" + pw + "@h:1?dial_timeout=" + pw, "dial_timeout"},
		{"redis://u:" + pw + "@h:1?pool_size=0", "pool_size"},
		{"redis://u:" + pw + "@h:1?max_retries=2", `"max_retries"`},
		{"redis://u:" + pw + "@h:1?" + pw + "%25=1", "unknown query parameter"},
		{"redis://u:%zz" + pw + "@h:1", "user information"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, err := Parse(tt.raw)
			if err == nil {
				t.Fatalf("%q accepted", tt.raw)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.want) || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "REDIS_URL") {
				t.Fatalf("%q: %q, want one line naming %q", tt.raw, msg, tt.want)
			}
			if strings.Contains(msg, pw) || strings.Contains(msg, pw[:6]) {
				t.Fatalf("%q: the error repeats the password: %q", tt.raw, msg)
			}
		})
	}
}

// FuzzParse: whatever the URL, Parse does not panic, and an error never
// repeats the user information's password.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"redis://h:1/0", "redis+sentinel://:p@a:1,b:2/m/0?sentinel_password=x", "redis+cluster://u:p@a:1,b:2",
		"rediss://u:p%2F@h:1", "redis://u:p/x@h"} {
		f.Add(s, "Pw9x")
	}
	f.Fuzz(func(t *testing.T, raw, pw string) {
		if len(pw) < 4 {
			return
		}
		full := strings.Replace(raw, "://", "://u:"+pw+"@", 1)
		_, err := Parse(full)
		if err == nil || !strings.Contains(err.Error(), pw) || strings.Contains(strings.Replace(full, "u:"+pw+"@", "", 1), pw) {
			return
		}
		// Not from the password when the same URL with another one says it too.
		if _, other := Parse(strings.Replace(full, "u:"+pw+"@", "u:Q@", 1)); other == nil || !strings.Contains(other.Error(), pw) {
			t.Fatalf("%q: the error repeats the password: %v", full, err)
		}
	})
}
