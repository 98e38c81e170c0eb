// @databricks/sql through dbxtop proxy (TLS with customCaCert): runs
// DBX_N statements of DBX_SQL (default SELECT 1) and prints one JSON line
// {"ok": n, "failed": n, "errors": [...]}. Each statement is bounded.
// DBX_KEEP_SESSION=1 exits without closing the session.
const fs = require('fs');
const { DBSQLClient } = require('@databricks/sql');

const env = process.env;
const n = Number(env.DBX_N || 5);
// DBX_SECS, when set, runs statements for that long instead of DBX_N
// (the proxy benchmark); ms is how long the statements took. Each
// statement is bounded by DBX_TIMEOUT_MS.
const secs = Number(env.DBX_SECS || 0);
const bound = (p, ms) => Promise.race([p, new Promise((_, rej) => setTimeout(() => rej(new Error(`no answer within ${ms} ms`)), ms))]);

(async () => {
  const out = { ok: 0, failed: 0, errors: [], ms: 0 };
  const client = new DBSQLClient();
  await client.connect({
    host: env.DBX_HOST, port: Number(env.DBX_PORT), path: env.DBX_PATH, token: env.DBX_TOKEN,
    customCaCert: fs.readFileSync(env.DBX_CA),
  });
  const session = await client.openSession();
  const sql = env.DBX_SQL || 'SELECT 1';
  const t0 = Date.now();
  for (let i = 0; secs > 0 ? Date.now() - t0 < secs * 1000 : i < n; i++) {
    let inClose = false;
    try {
      await bound((async () => {
        const op = await session.executeStatement(sql, { runAsync: true });
        const rows = await op.fetchAll();
        inClose = true;
        await op.close();
        inClose = false;
        if (rows.length !== 1) throw new Error(`${rows.length} rows`);
      })(), Number(env.DBX_TIMEOUT_MS || 60000));
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
  // DBX_CLOSE_TIMEOUT_MS bounds the session's close (the driver retries a
  // refused connection for minutes): unbounded unless set.
  const closeMs = Number(env.DBX_CLOSE_TIMEOUT_MS || 0);
  const closing = (async () => { await session.close(); await client.close(); })();
  try { await (closeMs > 0 ? bound(closing, closeMs) : closing); } catch (e) { out.errors.push('close: ' + String(e.message || e)); }
  console.log(JSON.stringify(out));
  process.exit(0);
})().catch((e) => { console.log(JSON.stringify({ ok: 0, failed: -1, errors: [String(e && e.message || e)] })); });
