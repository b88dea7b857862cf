// provider.mjs is the OAuth client provider of the tests' MCP hosts
// (ts-client-e2e.mjs, demo-client.mjs): everything kept in memory, the
// state it sends remembered so the host can check the response's. How the
// person is sent to authorize is the subclass's redirectToAuthorization.
import { randomBytes } from 'node:crypto';

export class MemoryProvider {
    clientInfo = undefined;
    tokenSet = undefined;
    verifier = undefined;
    discovery = undefined;
    sentState = undefined;

    constructor(redirectUrl, clientName) {
        this._redirectUrl = redirectUrl;
        this._clientName = clientName;
    }
    get redirectUrl() {
        return this._redirectUrl;
    }
    get clientMetadata() {
        return {
            client_name: this._clientName,
            redirect_uris: [this._redirectUrl],
            grant_types: ['authorization_code', 'refresh_token'],
            response_types: ['code'],
            token_endpoint_auth_method: 'none'
        };
    }
    state() {
        this.sentState = randomBytes(24).toString('base64url');
        return this.sentState;
    }
    clientInformation() {
        return this.clientInfo;
    }
    saveClientInformation(info) {
        this.clientInfo = info;
    }
    tokens() {
        return this.tokenSet;
    }
    saveTokens(tokens) {
        this.tokenSet = tokens;
    }
    saveCodeVerifier(v) {
        this.verifier = v;
    }
    codeVerifier() {
        return this.verifier;
    }
    saveDiscoveryState(s) {
        this.discovery = s;
    }
    discoveryState() {
        return this.discovery;
    }
    invalidateCredentials(scope) {
        if (scope === 'all' || scope === 'tokens') this.tokenSet = undefined;
        if (scope === 'all' || scope === 'client') this.clientInfo = undefined;
        if (scope === 'all' || scope === 'verifier') this.verifier = undefined;
        if (scope === 'all' || scope === 'discovery') this.discovery = undefined;
    }
}
