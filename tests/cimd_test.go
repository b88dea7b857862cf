package tests

import (
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/tabrelay/tabrelay/node"
	"github.com/tabrelay/tabrelay/protocol"
)

// metadataServer serves a client metadata document over https on loopback
// and returns its URL (the client id) and the roots that trust it.
func metadataServer(t *testing.T, redirectURI string) (string, *x509.CertPool) {
	t.Helper()
	var docURL string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=300")
		json.NewEncoder(w).Encode(map[string]any{"client_id": docURL, "client_name": "Metadata Host",
			"redirect_uris": []string{redirectURI}, "token_endpoint_auth_method": "none"})
	}))
	t.Cleanup(srv.Close)
	docURL = srv.URL + "/oauth/client.json"
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return docURL, pool
}

func TestClientMetadataDocument(t *testing.T) {
	h := &host{}
	redirect := "http://127.0.0.1:33419/callback"
	docURL, roots := metadataServer(t, redirect)

	t.Run("fetched and used when loopback is allowed by the test switch", func(t *testing.T) {
		r := startRelay(t, func(c *node.Config) { c.CIMDAllowLoopback, c.CIMDRootCAs = true, roots })
		b, pairing := pairedBrowser(t, r)
		*h = *newHost(t, r.url)
		h.clientID, h.redirectURI = docURL, redirect
		f, tokens := connect(t, r, b, h)
		if !strings.Contains(f.page, "Metadata Host") {
			t.Fatal("the waiting page does not show the document's client_name")
		}
		if g, err := r.node.OAuth().Verify(t.Context(), tokens["access_token"].(string)); err != nil || g.PairingID != pairing {
			t.Fatalf("verify: %+v %v", g, err)
		}
		if !strings.Contains(r.logs.String(), "TEST SWITCH ON") {
			t.Fatal("the loopback switch is not loud in the log")
		}
	})
	t.Run("a tab sees the client named by its document before approving", func(t *testing.T) {
		r := startRelay(t, func(c *node.Config) { c.CIMDAllowLoopback, c.CIMDRootCAs = true, roots })
		b, _ := pairedBrowser(t, r)
		h := newHost(t, r.url)
		h.clientID, h.redirectURI = docURL, redirect
		f := h.authorize()
		out, err := b.ask(r.url, "connect-info", f.code)
		if err != nil {
			t.Fatalf("connect-info: %v\n%s", err, out)
		}
		var info protocol.ConnectInfo
		if err := json.Unmarshal([]byte(out), &info); err != nil {
			t.Fatalf("connect-info printed %q: %v", out, err)
		}
		if info.Type != protocol.TypeConnectInfo || info.Client != "Metadata Host" || info.ClientKind != protocol.ClientMetadataDocument ||
			info.ClientURL != docURL || info.RedirectHost != "127.0.0.1:33419" || info.RequestedScope != nil {
			t.Fatalf("connect-info = %+v", info)
		}
		if st := h.status(f); st["state"] != "pending" {
			t.Fatalf("connect-info changed the request: %v", st)
		}
	})
	t.Run("refused without the switch: loopback is not a public address", func(t *testing.T) {
		r := startRelay(t, func(c *node.Config) { c.CIMDRootCAs = roots })
		q := url.Values{"response_type": {"code"}, "client_id": {docURL}, "redirect_uri": {redirect},
			"code_challenge": {strings.Repeat("a", 43)}, "code_challenge_method": {"S256"}}
		resp, err := http.Get(r.url + "/authorize?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("authorize with a loopback metadata document: %d, want an error page", resp.StatusCode)
		}
	})
}
