// hive-driver over HTTP (HTTPS with DBX_CA) with Basic login (user "token", the token as
// password) through dbxtop proxy: runs DBX_N statements of DBX_SQL
// (default SELECT 1) and
// prints one JSON line {"ok": n, "failed": n, "errors": [...]}. The
// driver retries nothing and can hang on a failure: each statement is
// bounded. DBX_KEEP_SESSION=1 exits without closing the session.
const fs = require('fs');
const hive = require('hive-driver');
const { TCLIService, TCLIService_types } = hive.thrift;

const env = process.env;
const n = Number(env.DBX_N || 5);
// DBX_SECS, when set, runs statements for that long instead of DBX_N
// (the proxy benchmark); ms is how long the statements took. Each
// statement is bounded by DBX_TIMEOUT_MS.
const secs = Number(env.DBX_SECS || 0);
const bound = (p, ms) => Promise.race([p, new Promise((_, rej) => setTimeout(() => rej(new Error(`no answer within ${ms} ms`)), ms))]);

(async () => {
  const out = { ok: 0, failed: 0, errors: [], ms: 0 };
  const client = new hive.HiveClient(TCLIService, TCLIService_types);
  // hive-driver reports a call's HTTP failure (a non-200 answer, a broken
  // connection) only as an 'error' event of the client, never through the
  // call's promise, which then never settles; with no listener the process
  // dies of the unhandled event. The call in flight fails with it.
  let failCall = null;
  client.on('error', (e) => { if (failCall) failCall(e); });
  const orClientError = (p) => Promise.race([p, new Promise((_, rej) => { failCall = rej; })]);
  const utils = new hive.HiveUtils(TCLIService_types);
  await client.connect({ host: env.DBX_HOST, port: Number(env.DBX_PORT), options: { path: env.DBX_PATH, https: !!env.DBX_CA, ca: env.DBX_CA ? fs.readFileSync(env.DBX_CA) : undefined } },
    new hive.connections.HttpConnection(), new hive.auth.PlainHttpAuthentication({ username: 'token', password: env.DBX_TOKEN }));
  const session = await orClientError(client.openSession({ client_protocol: TCLIService_types.TProtocolVersion.HIVE_CLI_SERVICE_PROTOCOL_V10 }));
  const sql = env.DBX_SQL || 'SELECT 1';
  const t0 = Date.now();
  for (let i = 0; secs > 0 ? Date.now() - t0 < secs * 1000 : i < n; i++) {
    let inClose = false;
    try {
      await bound(orClientError((async () => {
        const op = await session.executeStatement(sql, { runAsync: true });
        await utils.waitUntilReady(op, false, () => {});
        await utils.fetchAll(op);
        const rows = utils.getResult(op).getValue();
        inClose = true;
        await op.close();
        inClose = false;
        if (!rows || rows.length !== 1) throw new Error(`${rows && rows.length} rows`);
      })()), Number(env.DBX_TIMEOUT_MS || 30000));
      out.ok++;
    } catch (e) {
      out.failed++;
      if (out.errors.length < 20) out.errors.push(((inClose ? 'operation close: ' : '') + String(e && e.message || e)).slice(0, 300));
    }
  }
  out.ms = Date.now() - t0;
  if (env.DBX_KEEP_SESSION) {
    // A job that ends its process without closing its session (as after
    // its operation's close failed): the session is the server's to expire.
    console.log(JSON.stringify(out));
    process.exit(0);
  }
  try { await orClientError((async () => { await session.close(); await client.close(); })()); } catch (e) { out.errors.push('close: ' + String(e.message || e)); }
  console.log(JSON.stringify(out));
  process.exit(0);
})().catch((e) => { console.log(JSON.stringify({ ok: 0, failed: -1, errors: [String(e && e.message || e)] })); process.exit(0); });
