// Package placement runs tabrelay's nodes as one cluster through Redis
// (SPEC §7): membership with leases (Members, a protoactor
// ClusterProvider), one activation record per pairing taken atomically and
// local first (Lookup, a protoactor IdentityLookup and the actors' Router),
// and the cross-node hints (Bus: what happened to a browser, a cancelled
// call). The lookup's parts have a file each: records.go the records and
// their scripts, moves.go what a draining node hands to the others,
// sweep.go the purge of members that left.
//
// Every key of one family shares a hash tag ({members}, {placement}), so
// that a script touching several keys runs on Redis Cluster too.
package placement

import "strings"

// Kind is the cluster kind of pairing actors.
const Kind = "pairing"

// keys names the Redis keys under one prefix.
type keys string

func (k keys) members() string         { return string(k) + "{members}:leases" }
func (k keys) info() string            { return string(k) + "{members}:addr" }
func (k keys) gone(id string) string   { return string(k) + "{members}:gone:" + id }
func (k keys) hint() string            { return string(k) + "members:changed" }
func (k keys) record(id string) string { return string(k) + "{placement}:at:" + id }
func (k keys) of(member string) string { return string(k) + "{placement}:of:" + member }
func (k keys) events() string          { return string(k) + "browser-events" }

// checkPrefix refuses a prefix that would break the hash tags.
func checkPrefix(p string) {
	if strings.ContainsAny(p, "{}") {
		panic("placement: a key prefix must not hold braces: " + p)
	}
}
