// demo-client.mjs is the official MCP TypeScript client (v2,
// @modelcontextprotocol/client, pinned in package-lock.json) as a local MCP
// host would run it, driven line by line by a Go test (tests/demo_test.go)
// that plays the person in a real Chromium.
//
// It registers itself, and when the SDK sends the person to authorize it
// prints {"event":"authorize","url":…}; the test opens that URL in the
// browser, where the waiting page, once the person approved in the app's
// tab, goes to this script's loopback redirect URI. The script then
// exchanges the code (finishAuth), connects in the era asked for, and prints
// {"event":"connected",…}. After that it runs one command per stdin line:
//
//   {"id":1,"op":"call","name":"list_notes","arguments":{}}  → tools/call
//   {"id":2,"op":"list"}                                      → tools/list
//   {"id":4,"op":"read","uri":"ui://notes/board"}             → resources/read
//   {"id":3,"op":"cancel","target":1}                         → cancel call 1
//
// and answers each with one line: {"id":…,"ok":true,"result":…} or
// {"id":…,"ok":false,"error":"…"}, plus "statuses", the HTTP statuses of
// the requests it made meanwhile. It prints no token. Environment:
//   TABRELAY_URL          the relay's public URL (MCP is POST /)
//   TABRELAY_ERA          "legacy" (default) or a pinned version such as "2026-07-28"
//   TABRELAY_CLIENT_NAME  the client_name it registers with
import { createServer } from 'node:http';
import { createInterface } from 'node:readline';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { MemoryProvider } from './provider.mjs';

const relay = (process.env.TABRELAY_URL ?? '').replace(/\/$/, '');
if (!relay) {
    console.log(JSON.stringify({ event: 'fail', error: 'TABRELAY_URL is not set' }));
    process.exit(2);
}
const era = process.env.TABRELAY_ERA || 'legacy';
const clientName = process.env.TABRELAY_CLIENT_NAME || 'Notes E2E (TypeScript)';
const versionNegotiation = era === 'legacy' ? { mode: 'legacy' } : { mode: { pin: era } };
const say = (obj) => console.log(JSON.stringify(obj));

// Every request the SDK makes; a command's answer carries the statuses of
// its own.
const statuses = [];
async function countingFetch(input, init) {
    const res = await fetch(input, init);
    statuses.push(res.status);
    return res;
}

// The loopback redirect URI, as a desktop host listens on one.
let deliver;
const callback = new Promise((resolve) => (deliver = resolve));
const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    if (url.pathname !== '/callback') {
        res.writeHead(404).end();
        return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><title>Connected</title><p>You can close this tab.</p>');
    deliver(url.searchParams);
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const redirectUrl = `http://127.0.0.1:${server.address().port}/callback`;

class Provider extends MemoryProvider {
    async redirectToAuthorization(url) {
        say({ event: 'authorize', url: url.toString() });
    }
}

const provider = new Provider(redirectUrl, clientName);
const newTransport = () => new StreamableHTTPClientTransport(new URL(relay + '/'), { authProvider: provider, fetch: countingFetch });
const newClient = () => new Client({ name: 'tabrelay-demo-e2e', version: '1.0.0' }, { versionNegotiation });

function describe(e) {
    if (!(e instanceof Error)) return String(e);
    let s = `${e.name}: ${e.message}`;
    if (e.code !== undefined) s += ` (code ${e.code})`;
    return s.replace(/\s+/g, ' ');
}

let client = newClient();
try {
    await client.connect(newTransport());
    say({ event: 'fail', error: 'connected without authorization' });
    process.exit(1);
} catch {
    // UnauthorizedError: the person authorizes in the browser.
}
const query = await callback;
if (query.get('state') !== provider.sentState || query.get('iss') !== relay || !query.get('code')) {
    say({ event: 'fail', error: `the authorization response does not check out (state ${query.get('state') === provider.sentState}, iss ${query.get('iss')}, error ${query.get('error')})` });
    process.exit(1);
}
const transport = newTransport();
await transport.finishAuth(query);
client = newClient();
await client.connect(newTransport());
say({ event: 'connected', era: client.getProtocolEra(), version: client.getNegotiatedProtocolVersion() });

const running = new Map(); // call id → AbortController
const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
    if (!line.trim()) continue;
    let cmd;
    try {
        cmd = JSON.parse(line);
    } catch {
        say({ ok: false, error: 'not JSON: ' + line });
        continue;
    }
    if (cmd.op === 'cancel') {
        running.get(cmd.target)?.abort('the test cancels it');
        say({ id: cmd.id, ok: true });
        continue;
    }
    // Calls run concurrently: a call waiting for the person must not hold
    // the next command.
    const mark = statuses.length;
    const abort = new AbortController();
    running.set(cmd.id, abort);
    const op =
        cmd.op === 'list'
            ? client.listTools()
            : cmd.op === 'read'
              ? client.readResource({ uri: cmd.uri })
              : client.callTool({ name: cmd.name, arguments: cmd.arguments ?? {} }, { signal: abort.signal, timeout: 600_000 });
    op.then(
        (result) => say({ id: cmd.id, ok: true, result, statuses: statuses.slice(mark) }),
        (e) => say({ id: cmd.id, ok: false, error: describe(e), statuses: statuses.slice(mark) })
    ).finally(() => running.delete(cmd.id));
}
server.close();
await client.close().catch(() => {});
