// ts-client-e2e.mjs drives the official MCP TypeScript client (v2,
// @modelcontextprotocol/client, pinned in package-lock.json) against a relay
// in one protocol era, through the whole life of a connection: dynamic
// registration, authorization (the person approves the connect code from a
// headless tab), the token exchange, tools and resources, a forced token
// refresh, revocation, and the 401 that follows.
//
// Run by tests/tsclient_test.go with the system node (>= 20). Environment:
//   TABRELAY_URL          the relay's public URL (its issuer; MCP is POST /)
//   TABRELAY_BIN          the tabrelay binary (for `tabrelay tab approve`)
//   TABRELAY_ORIGIN       the app origin the browser's tabs connect from
//   TABRELAY_SECRET_FILE  the browser's tab secret file
//   TABRELAY_ERA          "legacy" or a pinned version such as "2026-07-28"
//
// Prints one line per step, "PASS <step>" or "FAIL <step>: <reason>", and
// exits non-zero if any step failed. On a failure (or with TABRELAY_HTTP_LOG
// set) it also prints every request the SDK made, with its status.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Client, ProtocolError, StreamableHTTPClientTransport, UnauthorizedError } from '@modelcontextprotocol/client';
import { MemoryProvider } from './provider.mjs';

const run = promisify(execFile);

function env(name) {
    const v = process.env[name];
    if (!v) {
        console.log(`FAIL setup: ${name} is not set`);
        process.exit(2);
    }
    return v;
}

const relay = env('TABRELAY_URL').replace(/\/$/, '');
const bin = env('TABRELAY_BIN');
const appOrigin = env('TABRELAY_ORIGIN');
const secretFile = env('TABRELAY_SECRET_FILE');
const era = env('TABRELAY_ERA');
const serverUrl = new URL(relay + '/');
const versionNegotiation = era === 'legacy' ? { mode: 'legacy' } : { mode: { pin: era } };
const wantEra = era === 'legacy' ? 'legacy' : 'modern';
const patience = 10_000;

// ---------------------------------------------------------------------------
// Steps

let failed = 0;
class Abort extends Error {}

function check(cond, why) {
    if (!cond) throw new Error(why);
}

async function step(name, fn, { critical = false } = {}) {
    try {
        await fn();
        console.log(`PASS ${name}`);
    } catch (e) {
        failed++;
        console.log(`FAIL ${name}: ${describe(e)}`);
        if (critical) throw new Abort();
    }
}

function describe(e) {
    if (!(e instanceof Error)) return String(e);
    let s = `${e.name}: ${e.message}`;
    if (e.code !== undefined) s += ` (code ${e.code})`;
    if (e.cause) s += ` [cause: ${describe(e.cause)}]`;
    return s.replace(/\s+/g, ' ');
}

// ---------------------------------------------------------------------------
// HTTP log: every request the SDK makes, with its answer's status.

const httpLog = [];

async function loggingFetch(input, init) {
    const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
    const entry = { method: init?.method ?? (input instanceof Request ? input.method : 'GET'), path: url.pathname };
    if (entry.path === '/token' && init?.body !== undefined) {
        entry.grant = new URLSearchParams(String(init.body)).get('grant_type');
    }
    httpLog.push(entry);
    const res = await fetch(input, init);
    entry.status = res.status;
    return res;
}

function since(mark) {
    return httpLog.slice(mark);
}

function fmt(entries) {
    return entries.map(e => `${e.method} ${e.path}${e.grant ? `(${e.grant})` : ''} ${e.status ?? '-'}`).join(', ');
}

// ---------------------------------------------------------------------------
// The host's OAuth client provider. Everything lives in memory; the person
// is played in redirectToAuthorization.

const redirectUrl = `http://127.0.0.1:${20000 + (process.pid % 20000)}/callback`;

class HeadlessProvider extends MemoryProvider {
    savedTokens = []; // every token set the SDK saved, in order
    authorizationUrls = [];
    playPerson = true; // false: a redirect is only recorded (after revocation)
    callback = undefined; // the authorization response's query, state checked

    constructor() {
        super(redirectUrl, `TS SDK e2e (${era})`);
    }
    saveTokens(tokens) {
        super.saveTokens(tokens);
        this.savedTokens.push(tokens);
    }

    async redirectToAuthorization(url) {
        this.authorizationUrls.push(url);
        if (this.playPerson) this.callback = await playThePerson(url, this.sentState);
    }
}

// playThePerson opens the authorization URL as the person's browser would,
// approves the connect code from a headless tab of the same browser, polls
// the waiting page's status URL until it has the authorization response, and
// returns that response's query once its state and iss check out.
async function playThePerson(authorizationUrl, sentState) {
    check(authorizationUrl.searchParams.get('state') === sentState, `the authorization URL carries state ${authorizationUrl.searchParams.get('state')}, not the provider's`);
    const page = await fetch(authorizationUrl, { redirect: 'manual' });
    const html = await page.text();
    check(page.status === 200, `GET /authorize: ${page.status} ${html.slice(0, 300)}`);
    const cookie = page.headers
        .getSetCookie()
        .map(c => c.split(';')[0])
        .join('; ');
    check(cookie !== '', 'the waiting page set no cookie');
    const code = html.match(/data-connect-code="([^"]+)"/)?.[1];
    const statusUrl = html.match(/data-status-url="([^"]+)"/)?.[1]?.replaceAll('&amp;', '&');
    check(code && statusUrl, 'the waiting page has no data-connect-code or data-status-url');

    const status = async () => {
        const res = await fetch(new URL(statusUrl, authorizationUrl), { headers: { cookie } });
        const body = await res.text();
        check(res.status === 200, `status URL: ${res.status} ${body}`);
        return JSON.parse(body);
    };
    const before = await status();
    check(before.state === 'pending', `status before approval: ${JSON.stringify(before)}`);

    try {
        // The person grants every probe tool but notes: the refusal step below.
        const scope = ['whoami', 'counter', 'view_picture', 'fail', 'echo', 'clear_all', 'wait'].flatMap(t => ['--scope', t]);
        await run(bin, ['tab', 'approve', '--relay', relay, '--origin', appOrigin, '--secret-file', secretFile, ...scope, code], { timeout: patience });
    } catch (e) {
        throw new Error(`tabrelay tab approve ${code}: ${e.message} ${e.stdout ?? ''} ${e.stderr ?? ''}`);
    }

    const deadline = Date.now() + patience;
    let st;
    for (;;) {
        st = await status();
        if (st.state === 'approved' && st.redirect) break;
        check(st.state === 'pending' || st.state === 'approved', `status after approval: ${JSON.stringify(st)}`);
        check(Date.now() < deadline, `status still ${JSON.stringify(st)} after ${patience} ms`);
        await new Promise(r => setTimeout(r, 50));
    }
    check(st.redirect.startsWith(redirectUrl + '?'), `the redirect ${st.redirect} is not to ${redirectUrl}`);
    const q = new URL(st.redirect).searchParams;
    // The SDK does not check state: the host must.
    check(q.get('state') === sentState, `the authorization response's state ${q.get('state')} is not the one sent`);
    check(q.get('iss') === relay, `the authorization response's iss ${q.get('iss')} is not ${relay}`);
    check(q.get('code'), 'the authorization response has no code');
    check(!q.has('error'), `the authorization response is an error: ${q}`);
    return q;
}

// ---------------------------------------------------------------------------

const provider = new HeadlessProvider();

function newTransport() {
    return new StreamableHTTPClientTransport(serverUrl, { authProvider: provider, fetch: loggingFetch });
}

function newClient() {
    return new Client({ name: 'tabrelay-ts-e2e', version: '1.0.0' }, { versionNegotiation });
}

async function rawMCP(token, method, params) {
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` };
    if (wantEra === 'modern') {
        params = { ...params, _meta: { 'io.modelcontextprotocol/protocolVersion': era, 'io.modelcontextprotocol/clientCapabilities': {} } };
        Object.assign(headers, { 'mcp-protocol-version': era, 'mcp-method': method });
    } else {
        headers['mcp-protocol-version'] = '2025-11-25';
    }
    return fetch(serverUrl, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
}

async function revoke(token, hint) {
    const res = await fetch(`${relay}/revoke`, {
        method: 'POST',
        body: new URLSearchParams({ token, token_type_hint: hint, client_id: provider.clientInfo.client_id })
    });
    const body = await res.text();
    check(res.status === 200, `POST /revoke (${hint}): ${res.status} ${body}`);
}

function text(result) {
    return (result.content ?? [])
        .filter(c => c.type === 'text')
        .map(c => c.text)
        .join('\n');
}

async function main() {
    console.log(`# @modelcontextprotocol/client against ${relay}, era ${era} (node ${process.version})`);
    let client = newClient();
    let transport = newTransport();

    await step(
        'connect without a token: 401, DCR, the person approves, state checked',
        async () => {
            let err;
            try {
                await client.connect(transport);
            } catch (e) {
                err = e;
            }
            check(err, 'connect succeeded without authorization');
            check(provider.clientInfo?.client_id, `no dynamic registration (connect failed with ${describe(err)})`);
            check(
                httpLog.some(e => e.path === '/register' && e.status === 201),
                `no 201 from POST /register: ${fmt(httpLog)}`
            );
            check(provider.authorizationUrls.length === 1, `${provider.authorizationUrls.length} authorization redirects (connect failed with ${describe(err)})`);
            check(provider.callback, `no authorization response (connect failed with ${describe(err)})`);
            check(err instanceof UnauthorizedError, `connect failed with ${describe(err)}, not UnauthorizedError`);
            const u = provider.authorizationUrls[0];
            check(u.searchParams.get('code_challenge_method') === 'S256', `authorization URL without S256 PKCE: ${u}`);
            check(u.searchParams.get('resource'), `authorization URL without resource: ${u}`);
        },
        { critical: true }
    );

    await step(
        'finishAuth exchanges the code (iss checked by the SDK)',
        async () => {
            const mark = httpLog.length;
            await transport.finishAuth(provider.callback);
            const t = provider.tokenSet;
            check(t?.access_token && t?.refresh_token, `tokens ${JSON.stringify(t && Object.keys(t))}`);
            check(t.token_type?.toLowerCase() === 'bearer', `token_type ${t.token_type}`);
            check(
                since(mark).some(e => e.path === '/token' && e.grant === 'authorization_code' && e.status === 200),
                `no authorization_code exchange: ${fmt(since(mark))}`
            );
        },
        { critical: true }
    );

    await step(
        `reconnect (${wantEra} era)`,
        async () => {
            await client.close().catch(() => {});
            client = newClient();
            transport = newTransport();
            await client.connect(transport);
            check(client.getProtocolEra() === wantEra, `era ${client.getProtocolEra()}, want ${wantEra}`);
            const v = client.getNegotiatedProtocolVersion();
            if (wantEra === 'modern') check(v === era, `negotiated ${v}, want ${era}`);
            else check(v && v < '2026', `negotiated ${v}`);
        },
        { critical: true }
    );

    await step('tools/list has the probe tools', async () => {
        const { tools } = await client.listTools();
        const names = tools.map(t => t.name);
        for (const want of ['counter', 'view_picture', 'fail', 'whoami']) check(names.includes(want), `no ${want} in ${names}`);
        check(!names.includes('notes'), `notes is listed although the person did not grant it: ${names}`);
        const vp = tools.find(t => t.name === 'view_picture');
        check(vp._meta?.ui?.resourceUri === 'ui://probe/view', `view_picture _meta ${JSON.stringify(vp._meta)}`);
    });

    await step('tools/call counter increment', async () => {
        const r = await client.callTool({ name: 'counter', arguments: { action: 'increment' } });
        check(!r.isError, `isError: ${text(r)}`);
        check(text(r).includes('<tabrelay-data>{"counter":1}</tabrelay-data>'), `text ${JSON.stringify(text(r))}`);
    });

    await step('tools/call view_picture returns an image', async () => {
        const r = await client.callTool({ name: 'view_picture', arguments: {} });
        check(!r.isError, `isError: ${text(r)}`);
        const img = r.content.find(c => c.type === 'image');
        check(img, `no image in ${JSON.stringify(r.content.map(c => c.type))}`);
        check(img.mimeType === 'image/png', `image mimeType ${img.mimeType}`);
        check(Buffer.from(img.data, 'base64').subarray(1, 4).toString() === 'PNG', 'the image data is not a PNG');
    });

    await step('tools/call fail is an error result', async () => {
        const r = await client.callTool({ name: 'fail', arguments: { message: 'boom' } });
        check(r.isError === true, `isError ${r.isError}: ${text(r)}`);
        check(text(r).includes('boom'), `text ${JSON.stringify(text(r))}`);
    });

    await step('tools/call notes is refused by the connection\'s scope', async () => {
        const r = await client.callTool({ name: 'notes', arguments: { action: 'list' } });
        check(r.isError === true, `isError ${r.isError}: ${text(r)}`);
        check(text(r).includes('<tabrelay-data>"notes"</tabrelay-data>') && text(r).includes('Connections panel'), `text ${JSON.stringify(text(r))}`);
    });

    await step('tools/call of an unknown tool throws -32602', async () => {
        let err;
        try {
            await client.callTool({ name: 'no_such_tool', arguments: {} });
        } catch (e) {
            err = e;
        }
        check(err, 'no error');
        check(err instanceof ProtocolError, `threw ${describe(err)}, not a ProtocolError`);
        check(err.code === -32602, `code ${err.code}: ${err.message}`);
    });

    await step('resources/read ui://probe/view', async () => {
        const r = await client.readResource({ uri: 'ui://probe/view' });
        const c = r.contents?.[0];
        check(c?.uri === 'ui://probe/view', `contents ${JSON.stringify(r.contents)}`);
        check(c.mimeType === 'text/html;profile=mcp-app', `mimeType ${c.mimeType}`);
        check(c.text?.includes('<html'), 'no HTML text');
    });

    await step('an invalid access token makes the SDK refresh; the refresh token rotates', async () => {
        const old = provider.tokenSet;
        provider.tokenSet = { ...old, access_token: 'tra_invalidated-by-the-test' };
        const saved = provider.savedTokens.length;
        const mark = httpLog.length;
        const r = await client.callTool({ name: 'counter', arguments: { action: 'get' } });
        const log = since(mark);
        check(
            log.some(e => e.method === 'POST' && e.path === '/' && e.status === 401),
            `the invalidated token was not refused: ${fmt(log)}`
        );
        check(
            log.some(e => e.path === '/token' && e.grant === 'refresh_token' && e.status === 200),
            `no refresh: ${fmt(log)}`
        );
        check(provider.savedTokens.length > saved, 'the SDK saved no new tokens');
        const fresh = provider.tokenSet;
        check(fresh.access_token && fresh.access_token !== old.access_token, 'the access token did not change');
        check(fresh.refresh_token && fresh.refresh_token !== old.refresh_token, 'the refresh token did not rotate');
        check(!r.isError && text(r).includes('"counter":1'), `after the refresh: ${text(r)}`);
    });

    let revoked;
    await step('POST /revoke the refresh token and the access token', async () => {
        revoked = provider.tokenSet;
        await revoke(revoked.refresh_token, 'refresh_token');
        await revoke(revoked.access_token, 'access_token');
    });

    await step('the revoked access token gets 401', async () => {
        const res = await rawMCP(revoked.access_token, 'tools/call', { name: 'counter', arguments: { action: 'get' } });
        const body = await res.text();
        check(res.status === 401, `${res.status} ${body.slice(0, 300)}`);
        const www = res.headers.get('www-authenticate') ?? '';
        check(www.includes(`resource_metadata="${relay}/.well-known/oauth-protected-resource"`), `WWW-Authenticate ${www}`);
    });

    await step('the SDK after revocation: 401, refresh refused, asks the person again', async () => {
        provider.playPerson = false;
        const redirects = provider.authorizationUrls.length;
        const mark = httpLog.length;
        let err;
        try {
            await client.callTool({ name: 'counter', arguments: { action: 'get' } });
        } catch (e) {
            err = e;
        }
        const log = since(mark);
        check(err, `the call succeeded: ${fmt(log)}`);
        check(err instanceof UnauthorizedError, `threw ${describe(err)}, not UnauthorizedError (${fmt(log)})`);
        check(log[0]?.method === 'POST' && log[0]?.path === '/' && log[0]?.status === 401, `first request ${fmt(log)}`);
        check(
            log.some(e => e.path === '/token' && e.grant === 'refresh_token' && e.status === 400),
            `the revoked refresh token was not refused: ${fmt(log)}`
        );
        check(provider.authorizationUrls.length === redirects + 1, `no new authorization request: ${fmt(log)}`);
    });

    await client.close().catch(() => {});
}

try {
    await main();
} catch (e) {
    if (!(e instanceof Abort)) {
        failed++;
        console.log(`FAIL unexpected: ${describe(e)}`);
    }
}
if (failed > 0 || process.env.TABRELAY_HTTP_LOG) console.log(`# HTTP requests of the SDK: ${fmt(httpLog)}`);
console.log(failed === 0 ? `ok: every step passed (${era})` : `${failed} step(s) failed (${era})`);
process.exit(failed === 0 ? 0 : 1);
