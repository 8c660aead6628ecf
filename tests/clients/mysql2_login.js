// Node mysql2 logs in to ticketd with the options given as JSON (user, password, port, and an
// optional ssl object of file paths: ca, cert, key), takes a ticket and reads the TLS status.
// usage: node mysql2_login.js '{"port":3306,"user":"app","password":"x","ssl":{"ca":"ca.pem"}}'
// prints one JSON line: {"ok":true,"ticket":"..","ssl_version":".."} or {"ok":false,"errno":..}
const fs = require('fs');
const mysql = require('mysql2/promise');

async function main() {
  const o = JSON.parse(process.argv[2]);
  const opts = {
    host: '127.0.0.1', port: o.port, user: o.user, password: o.password, database: 'tickets',
    supportBigNumbers: true, bigNumberStrings: true,
  };
  if (o.ssl) {
    opts.ssl = {};
    for (const k of ['ca', 'cert', 'key']) if (o.ssl[k]) opts.ssl[k] = fs.readFileSync(o.ssl[k]);
  }
  let conn;
  try {
    conn = await mysql.createConnection(opts);
  } catch (e) {
    console.log(JSON.stringify({ ok: false, errno: e.errno || null, code: e.code || null,
      message: e.message }));
    return;
  }
  const [t] = await conn.query('SELECT NEXTVAL(Tickets64) AS v');
  const [p] = await conn.execute('SELECT NEXTVAL(Tickets64) AS v');
  const [s] = await conn.query("SHOW STATUS LIKE 'Ssl_%'");
  const status = Object.fromEntries(s.map((r) => [r.Variable_name, r.Value]));
  await conn.end();
  console.log(JSON.stringify({ ok: true, ticket: String(t[0].v), prepared: String(p[0].v),
    ssl_version: status.Ssl_version, ssl_cipher: status.Ssl_cipher }));
}

main().catch((e) => { console.error(e); process.exit(1); });
