package main

import (
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tabrelay/tabrelay/admin"
	"github.com/tabrelay/tabrelay/internal/redisurl"
	"github.com/tabrelay/tabrelay/node"
	"github.com/tabrelay/tabrelay/protocol"
	"github.com/tabrelay/tabrelay/tabsocket"
	"github.com/tabrelay/tabrelay/web/demo"
)

// setting is one configuration value: a flag whose default comes from an
// environment variable (SPEC §9: flags and environment).
type setting struct {
	flag, env, def, help string
	val                  *string
	// secret: the environment's value is read at get, not made the flag's
	// default, so that -h never prints it.
	secret bool
}

func (s *setting) register(fs *flag.FlagSet) {
	def := s.def
	if v, ok := os.LookupEnv(s.env); ok && !s.secret {
		def = v
	}
	s.val = fs.String(s.flag, def, s.help+" ("+s.env+")")
}

func (s *setting) get() string {
	if v := strings.TrimSpace(*s.val); v != "" || !s.secret {
		return v
	}
	return strings.TrimSpace(os.Getenv(s.env))
}

// serveSettings are `tabrelay serve`'s settings; README's table lists them.
type serveSettings struct {
	publicURL, listen, adminListen, dataDir, signingKey, origins, appURL, bundle,
	redisURL, callWait, turnIdle, drainWindow, grace, shutdownDelay, logLevel, previousKeys, cimdLoopback, trustProxy,
	adminToken, adminHosts, redisPrefix, clusterListen, clusterAdvertise, leaseTTL, demo, maxPairings, newPairings, newPairingsBurst, crossDevice setting
}

func newServeSettings(fs *flag.FlagSet) *serveSettings {
	s := &serveSettings{
		publicURL:   setting{flag: "public-url", env: "RELAY_PUBLIC_URL", help: "the relay's public origin, as hosts reach it; default http://<listen>"},
		listen:      setting{flag: "listen", env: "RELAY_LISTEN", def: "127.0.0.1:8080", help: "host:port of the public listener"},
		adminListen: setting{flag: "admin-listen", env: "RELAY_ADMIN_LISTEN", def: "127.0.0.1:9090", help: "host:port of the admin listener (metrics)"},
		dataDir:     setting{flag: "data-dir", env: "RELAY_DATA_DIR", def: "data", help: "directory of the embedded store"},
		signingKey:  setting{flag: "signing-key", env: "RELAY_SIGNING_KEY", secret: true, help: "base64 key (32+ bytes) for HMACs; generated in the data dir when empty"},
		origins:     setting{flag: "allowed-origins", env: "ALLOWED_ORIGINS", help: "comma-separated origins of the app whose tabs may connect"},
		appURL:      setting{flag: "app-url", env: "APP_URL", help: "the app's URL (approval links go there)"},
		bundle:      setting{flag: "bundle", env: "RELAY_BUNDLE", help: "the app's bundle: a JSON file, or demo (the default), probe or conformance (embedded)"},
		redisURL:    setting{flag: "redis-url", env: "REDIS_URL", secret: true, help: "Redis for a cluster of nodes; empty = one node with the embedded store"},
		callWait:    setting{flag: "tab-call-wait", env: "TAB_CALL_WAIT", def: "225s", help: "how long a call waits for its tab"},
		turnIdle:    setting{flag: "agent-turn-idle", env: "AGENT_TURN_IDLE", def: "120s", help: "a connection's turn ends after this idle time"},
		drainWindow: setting{flag: "drain-window", env: "RELAY_DRAIN_WINDOW", def: "10s", help: "on shutdown, tabs reconnect spread over this window"},
		grace:       setting{flag: "grace", env: "RELAY_GRACE", def: "30s", help: "a shutdown ends within this"},
		logLevel:    setting{flag: "log-level", env: "RELAY_LOG_LEVEL", def: "info", help: "debug, info, warn or error"},
		shutdownDelay: setting{flag: "shutdown-delay", env: "RELAY_SHUTDOWN_DELAY", def: "2s",
			help: "on shutdown, the node (already unready) keeps accepting and answering requests this long, for balancers without a pre-stop hook; at most half of RELAY_GRACE"},
		previousKeys: setting{flag: "signing-key-previous", env: "RELAY_SIGNING_KEY_PREVIOUS", secret: true,
			help: "comma-separated base64 keys that still verify tokens after a key rotation"},
		cimdLoopback: setting{flag: "cimd-allow-loopback", env: "RELAY_CIMD_ALLOW_LOOPBACK", def: "false",
			help: "TEST ONLY: fetch client metadata documents from loopback addresses"},
		trustProxy: setting{flag: "trust-proxy", env: "RELAY_TRUST_PROXY", def: "false",
			help: "take client addresses from X-Forwarded-For (behind a load balancer)"},
		adminToken: setting{flag: "admin-token", env: "RELAY_ADMIN_TOKEN", secret: true,
			help: "bearer token (16+ characters) of the admin API on the admin listener; empty = admin API off"},
		adminHosts: setting{flag: "admin-hosts", env: "RELAY_ADMIN_HOSTS",
			help: "comma-separated host names the admin listener answers besides IP addresses and localhost (a DNS-rebinding page's Host is refused)"},
		redisPrefix: setting{flag: "redis-prefix", env: "RELAY_REDIS_PREFIX", def: "tabrelay:",
			help: "prefix of every Redis key (relays sharing one Redis need their own)"},
		clusterListen: setting{flag: "cluster-listen", env: "RELAY_CLUSTER_LISTEN", def: "127.0.0.1:7946",
			help: "host:port of this node's actor remote (gRPC without TLS: a private network only), with Redis"},
		clusterAdvertise: setting{flag: "cluster-advertise", env: "RELAY_CLUSTER_ADVERTISE",
			help: "host:port other nodes reach this node's remote at, when it differs from RELAY_CLUSTER_LISTEN"},
		demo: setting{flag: "demo", env: "RELAY_DEMO", def: "false",
			help: "serve the demo app at /demo/ (make run does): APP_URL defaults to it, ALLOWED_ORIGINS gains the relay's own origin"},
		leaseTTL: setting{flag: "lease-ttl", env: "RELAY_LEASE_TTL", def: "3s",
			help: "life of a node's cluster lease (renewed at a third of it); a dead node's pairings move after about this"},
		maxPairings: setting{flag: "max-pairings", env: "RELAY_MAX_PAIRINGS", def: "100000",
			help: "pairing actors one node holds at once; a browser over it is told to reconnect"},
		newPairings: setting{flag: "new-pairings-per-hour", env: "RELAY_NEW_PAIRINGS_PER_HOUR", def: strconv.Itoa(tabsocket.DefaultNewPairingsPerHour),
			help: "hellos of browsers the relay does not know, per network address on every node together: so many an hour after the burst; 0 = no limit"},
		newPairingsBurst: setting{flag: "new-pairings-burst", env: "RELAY_NEW_PAIRINGS_BURST", def: strconv.Itoa(tabsocket.DefaultNewPairingsBurst),
			help: "hellos of browsers the relay does not know that one network address may make at once (an office behind one NAT on its first morning)"},
		crossDevice: setting{flag: "connect-cross-device", env: "RELAY_CONNECT_CROSS_DEVICE", def: "true",
			help: "accept connect codes typed into a tab (perhaps on another device); false: only the approval link, in the browser that opened the waiting page"},
	}
	for _, st := range s.all() {
		st.register(fs)
	}
	return s
}

func (s *serveSettings) all() []*setting {
	return []*setting{&s.publicURL, &s.listen, &s.adminListen, &s.dataDir, &s.signingKey, &s.origins, &s.appURL,
		&s.bundle, &s.redisURL, &s.callWait, &s.turnIdle, &s.drainWindow, &s.grace, &s.shutdownDelay, &s.logLevel, &s.previousKeys, &s.cimdLoopback, &s.trustProxy,
		&s.adminToken, &s.adminHosts, &s.redisPrefix, &s.clusterListen, &s.clusterAdvertise, &s.leaseTTL, &s.demo, &s.maxPairings, &s.newPairings, &s.newPairingsBurst, &s.crossDevice}
}

// config checks every setting and returns the node's configuration, or
// one error that says what to fix.
func (s *serveSettings) config() (node.Config, error) {
	var c node.Config
	var err error
	if c.Listen, err = hostPort(&s.listen); err != nil {
		return c, err
	}
	if c.AdminListen, err = hostPort(&s.adminListen); err != nil {
		return c, err
	}
	if c.PublicURL, err = publicURL(s.publicURL.get(), c.Listen); err != nil {
		return c, err
	}
	if c.DataDir = s.dataDir.get(); c.DataDir == "" {
		return c, errors.New("RELAY_DATA_DIR is empty: name a directory for the embedded store")
	}
	if c.SigningKey, err = signingKey(s.signingKey.get()); err != nil {
		return c, err
	}
	for _, k := range strings.Split(s.previousKeys.get(), ",") {
		if strings.TrimSpace(k) == "" {
			continue
		}
		key, err := signingKey(strings.TrimSpace(k))
		if err != nil {
			return c, fmt.Errorf("RELAY_SIGNING_KEY_PREVIOUS: %v", err)
		}
		c.PreviousKeys = append(c.PreviousKeys, key)
	}
	if c.CIMDAllowLoopback, err = boolean(&s.cimdLoopback); err != nil {
		return c, err
	}
	if c.TrustProxy, err = boolean(&s.trustProxy); err != nil {
		return c, err
	}
	if c.AdminToken, err = adminToken(s.adminToken.get()); err != nil {
		return c, err
	}
	if c.AdminHosts, err = admin.ParseHosts(s.adminHosts.get()); err != nil {
		return c, err
	}
	if c.Demo, err = boolean(&s.demo); err != nil {
		return c, err
	}
	if c.AllowedOrigins, err = origins(s.origins.get(), c.Demo); err != nil {
		return c, err
	}
	if c.Demo {
		c.AllowedOrigins = withDemoOrigins(c.AllowedOrigins, c.PublicURL, c.Listen)
	}
	if c.AppURL = s.appURL.get(); c.AppURL == "" && c.Demo {
		c.AppURL = c.PublicURL + demo.Path
	} else if c.AppURL != "" {
		if u, perr := url.Parse(c.AppURL); perr != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return c, fmt.Errorf("APP_URL %q is not an http(s) URL", c.AppURL)
		}
	}
	crossDevice := true // on unless said otherwise: empty is the default, not false
	if s.crossDevice.get() != "" {
		if crossDevice, err = boolean(&s.crossDevice); err != nil {
			return c, err
		}
	}
	if c.NoCrossDevice = !crossDevice; c.NoCrossDevice && c.AppURL == "" {
		return c, errors.New("RELAY_CONNECT_CROSS_DEVICE=false needs APP_URL: the waiting page's approval link is then the only way to connect")
	}
	if c.Bundle, err = bundle(s.bundle.get()); err != nil {
		return c, err
	}
	if c.MaxPairings, err = integer(&s.maxPairings, 1, 10_000_000); err != nil {
		return c, err
	}
	if c.NewPairingsPerHour, err = integer(&s.newPairings, 0, 1_000_000); err != nil {
		return c, err
	}
	if c.NewPairingsPerHour == 0 {
		c.NewPairingsPerHour = -1 // the setting's 0 is "no limit"
	}
	if c.NewPairingsBurst, err = integer(&s.newPairingsBurst, 1, 10_000_000); err != nil {
		return c, err
	}
	for _, d := range []struct {
		s        *setting
		dst      *time.Duration
		min, max time.Duration
	}{
		{&s.callWait, &c.CallWait, time.Second, 10 * time.Minute},
		{&s.turnIdle, &c.TurnIdle, time.Second, 24 * time.Hour},
		{&s.drainWindow, &c.DrainWindow, 0, 10 * time.Minute},
		{&s.grace, &c.Grace, time.Second, time.Hour},
		{&s.shutdownDelay, &c.ShutdownDelay, 0, 10 * time.Minute},
	} {
		if *d.dst, err = duration(d.s, d.min, d.max); err != nil {
			return c, err
		}
	}
	// The rest of the grace answers what the node accepted meanwhile.
	if c.ShutdownDelay > c.Grace/2 {
		return c, fmt.Errorf("RELAY_SHUTDOWN_DELAY %v must be at most half of RELAY_GRACE (%v): the rest answers what the node accepted meanwhile", c.ShutdownDelay, c.Grace)
	}
	return c, s.cluster(&c)
}

// cluster reads the settings of cluster mode (REDIS_URL set).
func (s *serveSettings) cluster(c *node.Config) error {
	raw := s.redisURL.get()
	if raw == "" {
		return nil
	}
	u, err := redisurl.Parse(raw)
	if err != nil {
		return err // in its own words, which never quote the URL (its password)
	}
	if c.SigningKey == nil {
		return errors.New("RELAY_SIGNING_KEY is required with REDIS_URL: every node must hash with the same key")
	}
	// Fail fast while Redis is away (requests answer 503 at once rather
	// than queue), and keep the pool bounded. A refused dial is not tried
	// again within one attempt: go-redis's default (5 dials 100 ms apart,
	// for each of a command's 4 attempts) held the first requests of an
	// outage 1.3-1.8 s before their 503 (issue 17). The URL's query may
	// set the timeouts otherwise.
	opts := u.Options
	for _, d := range []*time.Duration{&opts.DialTimeout, &opts.ReadTimeout, &opts.WriteTimeout, &opts.PoolTimeout} {
		if *d == 0 {
			*d = time.Second
		}
	}
	opts.DialerRetries = 1
	c.Redis = opts
	if c.RedisPrefix = s.redisPrefix.get(); strings.ContainsAny(c.RedisPrefix, "{}") {
		return errors.New("RELAY_REDIS_PREFIX must not hold braces (they are Redis Cluster hash tags)")
	}
	if c.ClusterListen, err = hostPort(&s.clusterListen); err != nil {
		return err
	}
	if v := s.clusterAdvertise.get(); v != "" {
		if _, _, err := net.SplitHostPort(v); err != nil {
			return fmt.Errorf("RELAY_CLUSTER_ADVERTISE %q is not host:port", v)
		}
		c.ClusterAdvertise = v
	}
	c.LeaseTTL, err = duration(&s.leaseTTL, time.Second, time.Minute)
	return err
}

func hostPort(s *setting) (string, error) {
	v := s.get()
	if _, _, err := net.SplitHostPort(v); err != nil {
		return "", fmt.Errorf("%s %q is not host:port (e.g. 127.0.0.1:8080)", s.env, v)
	}
	return v, nil
}

func publicURL(v, listen string) (string, error) {
	if v == "" {
		return "http://" + listen, nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return "", fmt.Errorf("RELAY_PUBLIC_URL %q must be a bare origin like https://relay.example.com", v)
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host), nil
}

func signingKey(v string) ([]byte, error) {
	if v == "" {
		return nil, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(v); err == nil {
			if len(k) < 32 {
				return nil, fmt.Errorf("RELAY_SIGNING_KEY has %d bytes; it needs 32 or more (openssl rand -base64 32)", len(k))
			}
			return k, nil
		}
	}
	return nil, errors.New("RELAY_SIGNING_KEY is not base64 (make one with: openssl rand -base64 32)")
}

// minAdminToken is the shortest admin token accepted.
const minAdminToken = 16

func adminToken(v string) (string, error) {
	if v != "" && len(v) < minAdminToken {
		return "", fmt.Errorf("RELAY_ADMIN_TOKEN has %d characters; it needs %d or more (openssl rand -base64 32)", len(v), minAdminToken)
	}
	return v, nil
}

// origins reads ALLOWED_ORIGINS; it may be empty only when the demo is on
// (its origin is then the one allowed).
func origins(v string, demoOn bool) ([]string, error) {
	var out []string
	for _, o := range strings.Split(v, ",") {
		if strings.TrimSpace(o) == "" {
			continue
		}
		n, err := tabsocket.NormalizeOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("ALLOWED_ORIGINS: %q is not an origin like https://app.example.com", strings.TrimSpace(o))
		}
		out = append(out, n)
	}
	if len(out) == 0 && !demoOn {
		return nil, errors.New("ALLOWED_ORIGINS is empty: set it to the app's origin(s), e.g. https://app.example.com")
	}
	return out, nil
}

// withDemoOrigins adds the origins the demo app is served from: the
// relay's public origin and, for a listener on 127.0.0.1, the same port on
// localhost (a person may type either).
func withDemoOrigins(allowed []string, publicURL, listen string) []string {
	add := func(o string) {
		if !slices.Contains(allowed, o) {
			allowed = append(allowed, o)
		}
	}
	add(publicURL)
	if host, port, err := net.SplitHostPort(listen); err == nil && host == "127.0.0.1" && publicURL == "http://"+listen {
		add("http://localhost:" + port)
	}
	return allowed
}

// bundle reads RELAY_BUNDLE: empty is the demo app's bundle; "demo",
// "probe" and "conformance" name the embedded ones (the probe app's is the
// headless tab's, `tabrelay tab`); anything else is a bundle file.
func bundle(value string) (*protocol.Bundle, error) {
	if b := namedBundle(value); b != nil {
		return b, nil
	}
	data, err := os.ReadFile(value)
	if err != nil {
		return nil, fmt.Errorf("RELAY_BUNDLE: %w (or name an embedded bundle: demo, probe, conformance)", err)
	}
	b, err := protocol.LoadBundle(data)
	if err != nil {
		return nil, fmt.Errorf("RELAY_BUNDLE %s: %w", value, err)
	}
	return b, nil
}

// namedBundle is the embedded bundle called name, or nil.
func namedBundle(name string) *protocol.Bundle {
	switch name {
	case "", "demo":
		return demo.Bundle()
	case "probe":
		return protocol.ProbeBundle()
	case "conformance":
		return protocol.ConformanceBundle()
	}
	return nil
}

func boolean(s *setting) (bool, error) {
	switch s.get() {
	case "true", "1":
		return true, nil
	case "false", "0", "":
		return false, nil
	}
	return false, fmt.Errorf("%s %q must be true or false", s.env, s.get())
}

func integer(s *setting, min, max int) (int, error) {
	n, err := strconv.Atoi(s.get())
	if err != nil || n < min || n > max {
		return 0, fmt.Errorf("%s %q must be a whole number from %d to %d (e.g. %s)", s.env, s.get(), min, max, s.def)
	}
	return n, nil
}

func duration(s *setting, min, max time.Duration) (time.Duration, error) {
	d, err := time.ParseDuration(s.get())
	if err != nil || d < min || d > max {
		return 0, fmt.Errorf("%s %q must be a duration between %v and %v (e.g. %v)", s.env, s.get(), min, max, s.def)
	}
	return d, nil
}
