// ts-client-wait.mjs is the official MCP TypeScript client (v2,
// @modelcontextprotocol/client, pinned in package-lock.json) making one
// long tools/call as a host with a request timeout does: its own timeout
// (the SDK's default is 60 s), reset by every progress notification
// (resetTimeoutOnProgress), so that it gives up only after a silence that
// long. Run by tests/hosts_test.go, which answers the call late (the
// person takes their time) and reads what the client got.
//
// Environment:
//   TABRELAY_URL         the relay's public URL (MCP is POST /)
//   TABRELAY_TOKEN       an access token of a connection (sent as a bearer)
//   TABRELAY_ERA         "legacy" or a pinned version such as "2026-07-28"
//   TABRELAY_TOOL        the tool to call
//   TABRELAY_ARGS        its arguments, a JSON object (default {})
//   TABRELAY_TIMEOUT_MS  the request timeout (default 60000, the SDK's)
//
// Prints one JSON line per progress notification,
//   {"event":"progress","atMs":…,"progress":…,"message":"…"}
// and one at the end: {"event":"result","atMs":…,"isError":…,"text":"…"}
// or {"event":"error","atMs":…,"error":"…"}. Exits 0 either way; 2 when
// it could not connect.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const say = (obj) => console.log(JSON.stringify(obj));
const relay = (process.env.TABRELAY_URL ?? '').replace(/\/$/, '');
const token = process.env.TABRELAY_TOKEN ?? '';
const era = process.env.TABRELAY_ERA || 'legacy';
const tool = process.env.TABRELAY_TOOL ?? '';
const args = JSON.parse(process.env.TABRELAY_ARGS || '{}');
const timeout = Number(process.env.TABRELAY_TIMEOUT_MS || 60_000);
if (!relay || !token || !tool) {
    say({ event: 'error', atMs: 0, error: 'TABRELAY_URL, TABRELAY_TOKEN and TABRELAY_TOOL are needed' });
    process.exit(2);
}
const versionNegotiation = era === 'legacy' ? { mode: 'legacy' } : { mode: { pin: era } };

function describe(e) {
    if (!(e instanceof Error)) return String(e);
    let s = `${e.name}: ${e.message}`;
    if (e.code !== undefined) s += ` (code ${e.code})`;
    return s.replace(/\s+/g, ' ');
}

const client = new Client({ name: 'tabrelay-wait-e2e', version: '1.0.0' }, { versionNegotiation });
const transport = new StreamableHTTPClientTransport(new URL(relay + '/'), {
    requestInit: { headers: { authorization: `Bearer ${token}` } }
});
try {
    await client.connect(transport);
} catch (e) {
    say({ event: 'error', atMs: 0, error: 'connect: ' + describe(e) });
    process.exit(2);
}
say({ event: 'connected', era: client.getProtocolEra() });

const start = Date.now();
const at = () => Date.now() - start;
try {
    const result = await client.callTool(
        { name: tool, arguments: args },
        {
            timeout,
            resetTimeoutOnProgress: true,
            onprogress: (p) => say({ event: 'progress', atMs: at(), progress: p.progress, total: p.total, message: p.message })
        }
    );
    const text = (result.content ?? [])
        .filter((c) => c.type === 'text')
        .map((c) => c.text)
        .join('\n');
    say({ event: 'result', atMs: at(), isError: result.isError === true, text });
} catch (e) {
    say({ event: 'error', atMs: at(), error: describe(e) });
}
await client.close().catch(() => {});
