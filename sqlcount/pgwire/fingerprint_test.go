package pgwire

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFingerprint(t *testing.T) {
	tests := []struct {
		name, sql, want string
	}{
		{"literal", "SELECT * FROM order_items WHERE order_id = 42", "SELECT * FROM order_items WHERE order_id = ?"},
		{"parameter", "SELECT * FROM order_items WHERE order_id = $1", "SELECT * FROM order_items WHERE order_id = ?"},
		{"negative number", "SELECT * FROM order_items WHERE order_id=-42", "SELECT * FROM order_items WHERE order_id = ?"},
		{"negative after operator", "UPDATE a SET b = b + -4321 WHERE c = -1.5e3", "UPDATE a SET b = b + ? WHERE c = ?"},
		{"negatives in a list", "SELECT * FROM t WHERE b IN (-1, -2, 3)", "SELECT * FROM t WHERE b IN (?)"},
		{"negatives after keywords", "SELECT -1 FROM t WHERE a BETWEEN -5 AND -2", "SELECT ? FROM t WHERE a BETWEEN ? AND ?"},
		{"binary minus stays", "SELECT x-1, x - -1, 2*-3 FROM t", "SELECT x - ?, x - ?, ? * ? FROM t"},
		{"in list of literals", "SELECT a FROM t WHERE x IN (1,2,3)", "SELECT a FROM t WHERE x IN (?)"},
		{"in list of one", "SELECT a FROM t WHERE x IN (7)", "SELECT a FROM t WHERE x IN (?)"},
		{"in list of parameters", "SELECT a FROM t WHERE x IN ($1, $2, $3, $4, $5)", "SELECT a FROM t WHERE x IN (?)"},
		{"in list of strings", "SELECT a FROM t WHERE x IN ('a', 'b')", "SELECT a FROM t WHERE x IN (?)"},
		{"tuples", "SELECT * FROM t WHERE (a, b) IN ((1, 2), (3, 4), (5, 6))", "SELECT * FROM t WHERE (a, b) IN ((?))"},
		{"multi-row values", "INSERT INTO t (a, b) VALUES (1,'a'),(2,'b'),(3,'c')", "INSERT INTO t (a, b) VALUES (?)"},
		{"values with parameters", "INSERT INTO t (a, b) VALUES ($1, $2)", "INSERT INTO t (a, b) VALUES (?)"},
		{"function arguments stay apart", "SELECT f(1), (2) FROM t", "SELECT f(?), (?) FROM t"},
		{"strings", "SELECT 'it''s', E'a\\'b', $$x$$, $q$ y;z $q$, U&'d\\0061t', x'ff' FROM t", "SELECT ?, ?, ?, ?, ?, ? FROM t"},
		{"booleans fold, null stays", "SELECT * FROM t WHERE b = true AND c IS NULL", "SELECT * FROM t WHERE b = ? AND c IS NULL"},
		{"casts and operators", "SELECT x::int, '{1,2}'::int[], data->>'k' FROM t", "SELECT x::int, ?::int[], data ->> ? FROM t"},
		{"comments removed", "/* app=x, traceparent='00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' */ SELECT 1 -- trailing", "SELECT ?"},
		{"nested comment", "SELECT /* a /* b */ c */ 1", "SELECT ?"},
		{"white space collapsed", "SELECT\n\ta ,\n  b\nFROM   t", "SELECT a, b FROM t"},
		{"casing kept", "select A from Orders where ID = 1", "select A from Orders where ID = ?"},
		{"quoted identifiers kept", `SELECT "Weird Name", a AS b FROM "T"`, `SELECT "Weird Name", a AS b FROM "T"`},
		{"identifiers with digits", "SELECT t1.c2 FROM s1.t1", "SELECT t1.c2 FROM s1.t1"},
		{"trailing semicolon", "BEGIN;", "BEGIN"},
		{"empty", "", ""},
		{"only a comment", "-- ping", ""},
		{"limit and offset", "SELECT a FROM t LIMIT 10 OFFSET 20", "SELECT a FROM t LIMIT ? OFFSET ?"},
		// Casts, parentheses and calls are laid out one way (issue 11: this
		// one gave "select json_build_object ( ? :: text,, ( ? ) )").
		{"cast in a call", "select json_build_object('id'::text, (1))", "select json_build_object(?::text, (?))"},
		{"cast then argument", "select f(1::text, 2)", "select f(?::text, ?)"},
		{"nested calls keep their arguments", "SELECT f(g(h(1, 2), 3)), lower(trim(name)) FROM t", "SELECT f(g(h(?, ?), ?)), lower(trim(name)) FROM t"},
		{"count star", "SELECT count(*), count(DISTINCT a) FROM t", "SELECT count(*), count(DISTINCT a) FROM t"},
		{"qualified call", "SELECT pg_catalog.count ( i.x ) FROM pg_catalog.pg_class i", "SELECT pg_catalog.count(i.x) FROM pg_catalog.pg_class i"},
		{"any of a parameter", "SELECT * FROM t WHERE id = ANY($1)", "SELECT * FROM t WHERE id = ANY(?)"},
		{"any of an array", "SELECT * FROM t WHERE id = ANY (ARRAY[1, 2, 3])", "SELECT * FROM t WHERE id = ANY(ARRAY[?])"},
		{"all of a parameter", "SELECT * FROM t WHERE id <> ALL ($1)", "SELECT * FROM t WHERE id <> ALL(?)"},
		{"array cast", "SELECT $1::int[], $2 :: text [ ]", "SELECT ?::int[], ?::text[]"},
		{"parameter cast", "SELECT * FROM t WHERE id = $1::uuid", "SELECT * FROM t WHERE id = ?::uuid"},
		{"cast of a column", "SELECT CAST(x AS int), CAST($1 AS numeric(10, 2)) FROM t", "SELECT CAST(x AS int), CAST(? AS numeric(?, ?)) FROM t"},
		{"json operators", "SELECT data->>'name', data#>>'{a,b}' FROM t WHERE data->'a'->>'b' = 'x' AND data ? 'k'",
			"SELECT data ->> ?, data #>> ? FROM t WHERE data -> ? ->> ? = ? AND data ? ?"},
		{"quoted identifiers", `SELECT "User"."Name" FROM "public"."User" WHERE "User"."id" = 1`, `SELECT "User"."Name" FROM "public"."User" WHERE "User"."id" = ?`},
		{"quoted function name", `SELECT "MyFunc" ( 1 )`, `SELECT "MyFunc"(?)`},
		{"exists and not", "SELECT 1 WHERE EXISTS(SELECT 1 FROM t) AND NOT(a)", "SELECT ? WHERE EXISTS (SELECT ? FROM t) AND NOT (a)"},
		{"nested parentheses", "SELECT ((a + 1) * 2) FROM t", "SELECT ((a + ?) * ?) FROM t"},
		{"subscripts and slices", "SELECT a[1], a[1:2], ARRAY [ 1 , 2 ] FROM t", "SELECT a[?], a[?:?], ARRAY[?] FROM t"},
		{"signs", "SELECT -a, +b, ~c FROM t WHERE x = -y", "SELECT -a, +b, ~c FROM t WHERE x = -y"},
		{"column list of a qualified table", "INSERT INTO public.t(a) VALUES (1) RETURNING id", "INSERT INTO public.t (a) VALUES (?) RETURNING id"},
		{"on conflict", "INSERT INTO t (a) VALUES ($1) ON CONFLICT(a) DO UPDATE SET a = EXCLUDED.a", "INSERT INTO t (a) VALUES (?) ON CONFLICT (a) DO UPDATE SET a = EXCLUDED.a"},
		{"values rows with calls", "INSERT INTO t VALUES (1, now()), (2, now())", "INSERT INTO t VALUES (?, now())"},
		{"window", "SELECT row_number() OVER(PARTITION BY a ORDER BY b) FROM t", "SELECT row_number() OVER (PARTITION BY a ORDER BY b) FROM t"},
		{"named argument", "SELECT f(a := 1, b => 2)", "SELECT f(a := ?, b => ?)"},
		{"interval", "SELECT now() - interval '1 day'", "SELECT now() - interval ?"},
		{"type modifier", "CREATE TABLE t (a varchar(20), b numeric(10,2))", "CREATE TABLE t (a varchar(?), b numeric(?, ?))"},
		{"unbalanced", "SELECT f((1", "SELECT f((?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Fingerprint(tt.sql); got != tt.want {
				t.Errorf("Fingerprint(%q)\n got %q\nwant %q", tt.sql, got, tt.want)
			}
		})
	}
}

func TestFingerprintFoldsEqually(t *testing.T) {
	groups := [][]string{
		{"SELECT * FROM order_items WHERE order_id = 42", "SELECT * FROM order_items WHERE order_id = $1", "SELECT * FROM order_items WHERE order_id=-7", "SELECT  *  FROM order_items /* c */ WHERE order_id = 1.5"},
		{"SELECT a FROM t WHERE x IN (1)", "SELECT a FROM t WHERE x IN (1, 2, 3, 4, 5, 6, 7, 8, 9, 10)", "SELECT a FROM t WHERE x IN ($1,$2)", "SELECT a FROM t WHERE x IN ('a')"},
		{"select json_build_object('id'::text, (1))", "select json_build_object( 'id' :: text , ( 2 ) )", "select json_build_object($1::text, ($2))"},
		{"SELECT * FROM t WHERE id = ANY($1)", "SELECT * FROM t WHERE id = ANY ($1)", "SELECT * FROM t WHERE id = ANY('{1,2}')", "SELECT * FROM t WHERE id = ANY(  $1  )"},
		{"INSERT INTO t (a, b) VALUES (1, 2)", "INSERT INTO t(a,b) VALUES(1,2)", "INSERT INTO t (a, b) VALUES ($1, $2), ($3, $4)"},
		{"SELECT a FROM t WHERE b = true", "SELECT a FROM t WHERE b = FALSE", "SELECT a FROM t WHERE b = $1"},
	}
	for _, g := range groups {
		want := Fingerprint(g[0])
		for _, sql := range g[1:] {
			if got := Fingerprint(sql); got != want {
				t.Errorf("Fingerprint(%q) = %q, want %q (as %q)", sql, got, want, g[0])
			}
		}
	}
}

// TestFingerprintOfFingerprint: a fingerprint fingerprints to itself, and
// the spaced form of earlier versions ("IN ( ? )") to today's, so figures
// kept with older fingerprints can be matched again.
func TestFingerprintOfFingerprint(t *testing.T) {
	for _, sql := range []string{
		"select json_build_object('id'::text, (1))",
		"SELECT * FROM t WHERE id = ANY($1::uuid[]) AND data->>'a' = $2",
		"INSERT INTO t (a, b) VALUES (1, 2), (3, 4) ON CONFLICT (a) DO NOTHING",
		`SELECT "T".a, count(*) FROM "T" WHERE a IN (1, 2) AND -b < 3 GROUP BY 1`,
	} {
		fp := Fingerprint(sql)
		if again := Fingerprint(fp); again != fp {
			t.Errorf("Fingerprint(%q) = %q, its fingerprint %q", sql, fp, again)
		}
	}
	for old, want := range map[string]string{
		"SELECT * FROM t WHERE ( a, b ) IN ( ( ? ) )": "SELECT * FROM t WHERE (a, b) IN ((?))",
		"INSERT INTO t ( a, b ) VALUES ( ? )":         "INSERT INTO t (a, b) VALUES (?)",
		"SELECT x :: int, ? :: int [ ], data ->> ?":   "SELECT x::int, ?::int[], data ->> ?",
	} {
		if got := Fingerprint(old); got != want {
			t.Errorf("Fingerprint(%q) = %q, want %q", old, got, want)
		}
	}
}

func TestSplitStatements(t *testing.T) {
	tests := []struct {
		name string
		sql  string
		want []string
	}{
		{"one", "SELECT 1", []string{"SELECT 1"}},
		{"two", "SELECT 1; SELECT 2", []string{"SELECT 1", "SELECT 2"}},
		{"trailing semicolon and space", " SELECT 1 ;\n", []string{"SELECT 1"}},
		{"empty statements dropped", ";; SELECT 1;;; SELECT 2;", []string{"SELECT 1", "SELECT 2"}},
		{"semicolon in string", "SELECT 'a;b'; SELECT 'it''s;'", []string{"SELECT 'a;b'", "SELECT 'it''s;'"}},
		{"semicolon in E-string", `SELECT E'\';'; SELECT 2`, []string{`SELECT E'\';'`, "SELECT 2"}},
		{"semicolon in identifier", `SELECT 1 AS "a;b"; SELECT 2`, []string{`SELECT 1 AS "a;b"`, "SELECT 2"}},
		{"semicolon in dollar quote", "CREATE FUNCTION f() RETURNS int AS $body$ BEGIN RETURN 1; END; $body$ LANGUAGE plpgsql; SELECT f()",
			[]string{"CREATE FUNCTION f() RETURNS int AS $body$ BEGIN RETURN 1; END; $body$ LANGUAGE plpgsql", "SELECT f()"}},
		{"semicolon in empty-tag dollar quote", "SELECT $$;$$; SELECT 2", []string{"SELECT $$;$$", "SELECT 2"}},
		{"parameter is no dollar quote", "SELECT $1; SELECT $2", []string{"SELECT $1", "SELECT $2"}},
		{"semicolon in comments", "SELECT 1 -- a;b\n; /* c; /* d; */ e; */ SELECT 2", []string{"SELECT 1 -- a;b", "/* c; /* d; */ e; */ SELECT 2"}},
		{"begin atomic body", "CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT CASE WHEN true THEN 1 ELSE 2 END; SELECT 2; END; SELECT f()",
			[]string{"CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT CASE WHEN true THEN 1 ELSE 2 END; SELECT 2; END", "SELECT f()"}},
		{"begin transaction is no block", "BEGIN; SELECT 1; END; COMMIT", []string{"BEGIN", "SELECT 1", "END", "COMMIT"}},
		{"only comments", "-- nothing; here\n/* ; */", nil},
		{"empty", "", nil},
		{"unterminated string", "SELECT 'abc; SELECT 2", []string{"SELECT 'abc; SELECT 2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s scanner
			s.scan([]byte(tt.sql), true)
			var got []string
			for _, sp := range s.spans {
				got = append(got, tt.sql[sp.start:sp.end])
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("split %q (-want +got):\n%s", tt.sql, diff)
			}
		})
	}
}

func TestTraceparent(t *testing.T) {
	const id = "4bf92f3577b34da6a3ce929d0e0e4736"
	tests := []struct {
		name, sql, want string
	}{
		{"sqlcommenter", "SELECT 1 /*traceparent='00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'*/", id},
		{"with other keys", "SELECT 1 /*action='index',traceparent='00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',tracestate='x'*/", id},
		{"url-encoded", "SELECT 1 /*traceparent%3D%2700-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01%27*/", id},
		{"url-encoded dashes", "SELECT 1 /*traceparent='00%2D4bf92f3577b34da6a3ce929d0e0e4736%2D00f067aa0ba902b7%2D01'*/", id},
		{"upper case hex", "SELECT 1 /*traceparent='00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01'*/", id},
		{"line comment", "SELECT 1 -- traceparent='00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'", id},
		{"leading comment", "/* traceparent='00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' */ SELECT 1", id},
		{"in a string, not a comment", "SELECT 'traceparent=''00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'''", ""},
		{"all-zero trace id", "SELECT 1 /*traceparent='00-00000000000000000000000000000000-00f067aa0ba902b7-01'*/", ""},
		{"too short", "SELECT 1 /*traceparent='00-4bf92f3577b34da6a3ce929d0e0e47-00f067aa0ba902b7-01'*/", ""},
		{"none", "SELECT 1 /* hello */", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s scanner
			s.scan([]byte(tt.sql), true)
			if got := s.traceString(); got != tt.want {
				t.Errorf("trace of %q = %q, want %q", tt.sql, got, tt.want)
			}
		})
	}
}

func TestTagRows(t *testing.T) {
	tests := []struct {
		tag  string
		rows int64
		ok   bool
	}{
		{"SELECT 5", 5, true}, {"INSERT 0 3", 3, true}, {"UPDATE 12", 12, true}, {"COPY 1000", 1000, true},
		{"CREATE TABLE", 0, false}, {"BEGIN", 0, false}, {"", 0, false}, {"5", 0, false},
	}
	for _, tt := range tests {
		n, ok := tagRows([]byte(tt.tag))
		if n != tt.rows || ok != tt.ok {
			t.Errorf("tagRows(%q) = %d, %v; want %d, %v", tt.tag, n, ok, tt.rows, tt.ok)
		}
	}
}
