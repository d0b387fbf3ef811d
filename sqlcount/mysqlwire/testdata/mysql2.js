// mysql2.js: a workload of Node's mysql2 driver through the MySQL counter:
// text queries, prepared statements (execute: the binary protocol), a query
// string of several statements, a failing statement, COM_PING,
// COM_CHANGE_USER and compression asked for. Usage: node mysql2.js HOST PORT
// USER PASSWORD DATABASE. It prints one line, "ok", when all went well.
const mysql = require('mysql2/promise');

async function main() {
  const [host, port, user, password, database] = process.argv.slice(2);
  const conn = await mysql.createConnection({
    host, port: Number(port), user, password, database,
    multipleStatements: true, compress: true,
  });
  await conn.query('CREATE TABLE books (id INT PRIMARY KEY, title VARCHAR(80), year INT)');
  for (let i = 1; i <= 4; i++) {
    await conn.execute('INSERT INTO books (id, title, year) VALUES (?, ?, ?)', [i, 'Book ' + i, 1990 + i]);
  }
  const [rows] = await conn.execute('SELECT id, title FROM books WHERE year > ?', [1991]);
  if (rows.length !== 3) throw new Error('execute read ' + rows.length + ' rows, want 3');
  const [text] = await conn.query('SELECT COUNT(*) AS n FROM books WHERE title LIKE ?', ['Book%']);
  if (text[0].n !== 4) throw new Error('count ' + text[0].n + ', want 4');
  const [multi] = await conn.query('SELECT 1 AS a; SELECT 2 AS b; UPDATE books SET year = year + 1 WHERE id = 1');
  if (multi.length !== 3) throw new Error('multi-statement query gave ' + multi.length + ' results, want 3');
  try {
    await conn.query('SELECT * FROM no_such_table');
    throw new Error('a select of a missing table succeeded');
  } catch (e) {
    if (e.errno !== 1146) throw e;
  }
  await conn.ping();
  await conn.changeUser({ user, password, database });
  const [after] = await conn.query('SELECT title FROM books WHERE id = 2');
  if (after[0].title !== 'Book 2') throw new Error('after changeUser: ' + JSON.stringify(after));
  await conn.end();
  console.log('ok');
}

main().catch((e) => { console.error(e); process.exit(1); });
