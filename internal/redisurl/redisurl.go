// Package redisurl reads REDIS_URL: one Redis, Redis behind Sentinel, or a
// Redis Cluster, as go-redis UniversalOptions (issue 16; the URL forms are
// pomerium's). It only parses: it dials nothing, and its errors never
// quote the URL, whose user information holds a password.
//
//	redis://[user:pass@]host:port[/db]            one server
//	rediss://…                                    the same over TLS
//	redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db]
//	redis+cluster://[user:pass@]host:port[,host:port…]
//
// rediss+sentinel and rediss+cluster are the TLS forms of the other two. A
// host without its port has Redis's (6379), or Sentinel's (26379).
// The user information is the data nodes' (master, replicas, cluster
// nodes); sentinels that want a password of their own take it from the
// sentinel_username and sentinel_password query parameters.
package redisurl

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Shape is the kind of Redis a URL names.
type Shape int

const (
	Single   Shape = iota // one server (redis://, rediss://)
	Sentinel              // a master and replicas that Sentinel fails over
	Cluster               // a Redis Cluster
)

func (s Shape) String() string {
	return [...]string{"single", "sentinel", "cluster"}[s]
}

// URL is a parsed REDIS_URL.
type URL struct {
	Shape   Shape
	Options *goredis.UniversalOptions
}

// forms is what an error says a REDIS_URL may look like.
const forms = "redis://[user:pass@]host:port/db, rediss://…, redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] or redis+cluster://[user:pass@]host:port[,host:port…]"

// Parse reads raw. Zero durations and sizes in the options mean "not
// given": the caller puts its defaults there.
func Parse(raw string) (URL, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return URL{}, errors.New("REDIS_URL is not a Redis URL: want " + forms)
	}
	var u URL
	var useTLS bool
	switch strings.ToLower(scheme) {
	case "redis":
	case "rediss":
		useTLS = true
	case "redis+sentinel":
		u.Shape = Sentinel
	case "rediss+sentinel":
		u.Shape, useTLS = Sentinel, true
	case "redis+cluster":
		u.Shape = Cluster
	case "rediss+cluster":
		u.Shape, useTLS = Cluster, true
	default:
		return URL{}, fmt.Errorf("REDIS_URL has the scheme %s: want %s", quoteWord(scheme), forms)
	}
	// The authority ends at the first '/', '?' or '#': a list of hosts is
	// not something net/url parses, so it is cut out by hand.
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	if strings.Contains(tail, "@") {
		// A password holding / ? or # unencoded: the user information
		// would be read as the path or query, and repeated from there.
		return URL{}, errors.New("REDIS_URL: an @ after the hosts: percent-encode any / ? # @ in the user name and password")
	}
	opts := &goredis.UniversalOptions{}
	hosts := authority
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		info, err := url.Parse("x://" + authority[:at] + "@h")
		if err != nil || info.User == nil {
			return URL{}, errors.New("REDIS_URL: its user information (before @) is not user:password, percent-encoded")
		}
		opts.Username = info.User.Username()
		opts.Password, _ = info.User.Password()
		hosts = authority[at+1:]
	}
	port := "6379"
	if u.Shape == Sentinel {
		port = "26379"
	}
	for _, h := range strings.Split(hosts, ",") {
		if h != "" && !strings.Contains(h, ":") {
			h += ":" + port // the default port of the shape, as go-redis's own URLs have it
		}
		if err := checkHostPort(h); err != nil {
			return URL{}, err
		}
		opts.Addrs = append(opts.Addrs, h)
	}
	if u.Shape == Single && len(opts.Addrs) > 1 {
		return URL{}, errors.New("REDIS_URL names several hosts: use redis+sentinel:// (Sentinel) or redis+cluster:// (Redis Cluster)")
	}
	rest2, err := url.Parse("x://h" + tail)
	if err != nil {
		return URL{}, errors.New("REDIS_URL: the part after the hosts is not a URL path and query")
	}
	if err := u.path(opts, rest2.Path); err != nil {
		return URL{}, err
	}
	if err := u.query(opts, rest2.Query()); err != nil {
		return URL{}, err
	}
	if useTLS {
		// No ServerName: each node's own host name is checked (tls.Dial
		// takes it from the address), which a list of hosts needs.
		opts.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	opts.IsClusterMode = u.Shape == Cluster
	u.Options = opts
	return u, nil
}

// checkHostPort refuses what is not host:port with a port.
func checkHostPort(h string) error {
	host, port, err := net.SplitHostPort(h)
	n, perr := strconv.Atoi(port)
	if err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
		// The host is not repeated: without its @, a URL's password
		// stands where the host should.
		return errors.New("REDIS_URL: a host is not host or host:port (like redis:6379; several are separated by commas)")
	}
	return nil
}

// path reads /db (one server), /MASTER[/db] (Sentinel) or nothing
// (Cluster, which has database 0 only).
func (u *URL) path(opts *goredis.UniversalOptions, p string) error {
	parts := strings.FieldsFunc(p, func(r rune) bool { return r == '/' })
	db := ""
	switch u.Shape {
	case Single:
		if len(parts) > 1 {
			return errors.New("REDIS_URL: after host:port comes /db, a database number, and nothing more")
		}
		if len(parts) == 1 {
			db = parts[0]
		}
	case Sentinel:
		if len(parts) == 0 || len(parts) > 2 {
			return errors.New("REDIS_URL: a redis+sentinel:// URL names its master after the sentinels: /MASTER or /MASTER/db")
		}
		opts.MasterName = parts[0]
		if len(parts) == 2 {
			db = parts[1]
		}
	case Cluster:
		if len(parts) > 0 {
			return errors.New("REDIS_URL: a redis+cluster:// URL has no path (a Redis Cluster has database 0 only)")
		}
	}
	if db != "" {
		n, err := strconv.Atoi(db)
		if err != nil || n < 0 {
			return errors.New("REDIS_URL: the database (after host:port/) must be a number like 0")
		}
		opts.DB = n
	}
	return nil
}

// query reads the options that matter to a relay; any other is refused
// by name (its value is never repeated: it may be a password).
func (u *URL) query(opts *goredis.UniversalOptions, q url.Values) error {
	for name, vals := range q {
		v := vals[len(vals)-1]
		var err error
		switch name {
		case "dial_timeout":
			opts.DialTimeout, err = positiveDuration(name, v)
		case "read_timeout":
			opts.ReadTimeout, err = positiveDuration(name, v)
		case "write_timeout":
			opts.WriteTimeout, err = positiveDuration(name, v)
		case "pool_timeout":
			opts.PoolTimeout, err = positiveDuration(name, v)
		case "pool_size":
			opts.PoolSize, err = positiveInt(name, v)
		case "client_name":
			opts.ClientName = v
		case "sentinel_username", "sentinel_password":
			if u.Shape != Sentinel {
				return fmt.Errorf("REDIS_URL: %s is for redis+sentinel:// URLs only", name)
			}
			if name == "sentinel_username" {
				opts.SentinelUsername = v
			} else {
				opts.SentinelPassword = v
			}
		default:
			return fmt.Errorf("REDIS_URL has the unknown query parameter %s: known are dial_timeout, read_timeout, write_timeout, pool_timeout, pool_size, client_name, sentinel_username and sentinel_password", quoteWord(name))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func positiveDuration(name, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 || d > time.Minute {
		return 0, fmt.Errorf("REDIS_URL: %s must be a duration up to 1m, like 2s", name)
	}
	return d, nil
}

func positiveInt(name, v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 10000 {
		return 0, fmt.Errorf("REDIS_URL: %s must be a number from 1 to 10000", name)
	}
	return n, nil
}

// quoteWord is what an error repeats of a scheme or a parameter name:
// the word quoted when it reads as one (letters, digits, + _ . -, at most
// 30), else nothing, so that no stray part of a password is repeated.
func quoteWord(s string) string {
	if len(s) == 0 || len(s) > 30 {
		return "(not repeated)"
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("+_.-", r)) {
			return "(not repeated)"
		}
	}
	return strconv.Quote(s)
}
