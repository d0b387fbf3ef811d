// A small Sequelize 6 service on MySQL/MariaDB for the end-to-end tests:
// GET /authors lists the authors with their books, GET /authors/:id one
// author with its books. With APP_SLOW=1 the list is an N+1: one query for
// the authors, then one per author through Sequelize's lazy association
// getter (author.getBooks()). It listens on $PORT and reaches the database
// through $MYSQL_URL (mysql://user:password@host:port/db); the tables
// Authors and Books exist already.
const http = require('http');
const { Sequelize, DataTypes } = require('sequelize');

const sequelize = new Sequelize(process.env.MYSQL_URL, { logging: false, pool: { max: 4, min: 0 } });
const Author = sequelize.define('Author', { name: DataTypes.STRING }, { timestamps: false });
const Book = sequelize.define('Book', { title: DataTypes.STRING }, { timestamps: false });
Author.hasMany(Book);
Book.belongsTo(Author);
const slow = process.env.APP_SLOW === '1';

async function listAuthors() {
  if (!slow) {
    const authors = await Author.findAll({ include: Book, order: [['id', 'ASC']] });
    return authors.map((a) => ({ id: a.id, name: a.name, books: a.Books.map((b) => b.title) }));
  }
  const authors = await Author.findAll({ order: [['id', 'ASC']] });
  const out = [];
  for (const a of authors) {
    const books = await a.getBooks();
    out.push({ id: a.id, name: a.name, books: books.map((b) => b.title) });
  }
  return out;
}

async function getAuthor(id) {
  const a = await Author.findByPk(id, { include: Book });
  return a && { id: a.id, name: a.name, books: a.Books.map((b) => b.title) };
}

const server = http.createServer(async (req, res) => {
  try {
    let body;
    const m = req.url.match(/^\/authors\/(\d+)$/);
    if (req.url === '/authors') body = await listAuthors();
    else if (m) body = await getAuthor(Number(m[1]));
    else if (req.url === '/') body = { ok: true };
    if (body === undefined || body === null) {
      res.writeHead(404, { 'Content-Type': 'application/json' });
      res.end('{"error":"not found"}');
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
  } catch (e) {
    res.writeHead(500, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ error: String(e) }));
  }
});
server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => { server.close(); sequelize.close().then(() => process.exit(0)); });
