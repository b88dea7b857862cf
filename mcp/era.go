package mcp

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/tabrelay/tabrelay/protocol"
)

// Protocol versions (reference/mcp.md).
const (
	ModernVersion = "2026-07-28"
	LatestLegacy  = "2025-11-25"
	// DefaultLegacy is assumed when a legacy request carries no
	// MCP-Protocol-Version header (streamable HTTP, 2025-06-18 and later).
	DefaultLegacy = "2025-03-26"
)

var legacyVersions = map[string]bool{"2024-11-05": true, "2025-03-26": true, "2025-06-18": true, "2025-11-25": true}

// The modern era's _meta keys.
const (
	metaVersion      = "io.modelcontextprotocol/protocolVersion"
	metaCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaServerInfo   = "io.modelcontextprotocol/serverInfo"
	metaSubscription = "io.modelcontextprotocol/subscriptionId"
	metaLogLevel     = "io.modelcontextprotocol/logLevel"
)

// era is how a request is served: the handshake era, or the stateless
// modern one.
type era struct {
	modern  bool
	version string
}

// paramsMeta is what every request's params may carry, and a
// tools/call's arguments: the params are decoded once (eraOf), and the
// call takes them from here.
type paramsMeta struct {
	Meta      map[string]json.RawMessage `json:"_meta"`
	Name      string                     `json:"name"`      // tools/call, prompts/get
	URI       string                     `json:"uri"`       // resources/read
	Arguments json.RawMessage            `json:"arguments"` // tools/call
}

// eraOf decides the era of a request and checks the modern era's headers
// against the body (basic/transports/streamable-http, 2026-07-28); p is
// the request's params, decoded.
func eraOf(r *http.Request, req *request, p *paramsMeta) (era, *protocol.RelayError) {
	if len(req.Params) > 0 && json.Unmarshal(req.Params, p) != nil {
		return era{}, protocol.ErrMalformedParams
	}
	rawVersion, hasMeta := p.Meta[metaVersion]
	header := headerValue(r, "MCP-Protocol-Version")
	modern := hasMeta || (header != "" && !legacyVersions[header])
	if !modern {
		v := header
		if v == "" {
			v = DefaultLegacy
		}
		return era{version: v}, nil
	}
	// The modern wire's checks, in the order the specification's
	// conformance suite expects: _meta, then the version header, then the
	// version, then the method and name headers.
	_, hasCaps := p.Meta[metaCapabilities]
	if !hasMeta || !hasCaps {
		return era{}, protocol.ErrMalformedParams.With("_meta must carry " + metaVersion + " and " + metaCapabilities + ".")
	}
	var version string
	_ = json.Unmarshal(rawVersion, &version)
	if header == "" || header != version {
		return era{}, protocol.ErrHeaderMismatch.With("The MCP-Protocol-Version header must be present and equal the request's _meta protocol version.")
	}
	if version != ModernVersion {
		return era{}, protocol.ErrUnsupportedVersion.WithData(map[string]any{"supported": supportedVersions(), "requested": version})
	}
	if m := headerValue(r, "Mcp-Method"); m != req.Method {
		return era{}, protocol.ErrHeaderMismatch.With("The Mcp-Method header must equal the request's method.")
	}
	if want, named := nameOf(req.Method, *p); named && headerValue(r, "Mcp-Name") != want {
		return era{}, protocol.ErrHeaderMismatch.With("The Mcp-Name header must equal the request's tool, prompt or resource.")
	}
	return era{modern: true, version: version}, nil
}

func supportedVersions() []string {
	return []string{ModernVersion, "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}
}

// nameOf is what Mcp-Name must say for a method that names something
// (its row's mcpName).
func nameOf(method string, p paramsMeta) (string, bool) {
	switch serverMethods[method].mcpName {
	case "name":
		return p.Name, true
	case "uri":
		return p.URI, true
	}
	return "", false
}

// headerValue reads a header, decoding the =?base64?…?= form that carries
// values a header cannot hold as they are.
func headerValue(r *http.Request, name string) string {
	v := strings.TrimSpace(r.Header.Get(name))
	if inner, ok := strings.CutPrefix(v, "=?base64?"); ok {
		if inner, ok = strings.CutSuffix(inner, "?="); ok {
			if b, err := base64.StdEncoding.DecodeString(inner); err == nil {
				return string(b)
			}
		}
	}
	return v
}

// negotiate answers an initialize's requested version: itself when this
// server speaks it, else the latest handshake version.
func negotiate(requested string) string {
	if legacyVersions[requested] {
		return requested
	}
	return LatestLegacy
}
