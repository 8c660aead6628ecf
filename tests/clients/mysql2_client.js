// Node mysql2 against ticketd: the Flickr recipe with query() (text protocol) and execute()
// (server-side prepared statements, binary protocol), plus NEXTVAL and NEXT n VALUES.
// usage: node mysql2_client.js PORT   -> prints one JSON line of results; exits 1 on failure
const mysql = require('mysql2/promise');

async function main() {
  const port = Number(process.argv[2]);
  const conn = await mysql.createConnection({
    host: '127.0.0.1', port, user: 'app', password: 's3cret-app', database: 'tickets',
    supportBigNumbers: true, bigNumberStrings: true,
  });
  const out = { query: [], execute: [], nextval: [], block: null, errors: {} };
  for (let i = 0; i < 5; i++) {
    const [res] = await conn.query("REPLACE INTO Tickets64 (stub) VALUES ('a')");
    const [rows] = await conn.query('SELECT LAST_INSERT_ID() AS id');
    out.query.push([String(res.insertId), String(rows[0].id), res.affectedRows]);
  }
  for (let i = 0; i < 5; i++) {
    const [res] = await conn.execute('REPLACE INTO Tickets64 (stub) VALUES (?)', ['a']);
    const [rows] = await conn.execute('SELECT LAST_INSERT_ID()');
    out.execute.push([String(res.insertId), String(rows[0]['LAST_INSERT_ID()'])]);
  }
  for (let i = 0; i < 3; i++) {
    const [a] = await conn.execute('SELECT NEXTVAL(Tickets64) AS v');
    const [b] = await conn.query('SELECT NEXT VALUE FOR Tickets64 AS v');
    out.nextval.push(String(a[0].v), String(b[0].v));
  }
  // Server-side prepares: what COM_STMT_PREPARE describes must be what COM_STMT_EXECUTE sends.
  out.prepared = [];
  const shape = (cols) => (cols || []).map(
    (c) => [c.name, c.columnType, c.flags, c.characterSet, c.columnLength]);
  for (const sql of ['SELECT 1 AS one', "SELECT 'a' AS s, NULL AS n, -2 AS neg",
    'SELECT @@max_allowed_packet AS m, @@version AS v', 'SELECT LAST_INSERT_ID() AS id',
    'SELECT NEXTVAL(Tickets64) AS v', 'SELECT NEXT 2 VALUES FROM Tickets64',
    "SHOW VARIABLES LIKE 'version'", 'SHOW WARNINGS']) {
    const stmt = await conn.prepare(sql);
    const [rows, fields] = await stmt.execute([]);
    out.prepared.push({ sql, described: shape(stmt.statement.columns), executed: shape(fields),
      first: rows.length ? String(Object.values(rows[0])[0]) : null });
    await stmt.close();
  }
  const [blk] = await conn.query('SELECT NEXT 100 VALUES FROM Tickets64');
  out.block = String(blk[0].nextval);
  try {
    await conn.query("REPLACE INTO Nope (stub) VALUES ('a')");
  } catch (e) {
    out.errors.unknown = [e.errno, e.sqlState, e.message];
  }
  try {
    await conn.query('SELEC 1');
  } catch (e) {
    out.errors.syntax = [e.errno, e.sqlState];
  }
  const [after] = await conn.query('SELECT 1 AS one');  // the connection survived the errors
  out.after_errors = after[0].one;
  await conn.end();
  console.log(JSON.stringify(out));
}

main().catch((e) => { console.error(e); process.exit(1); });
