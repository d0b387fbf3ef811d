package sqlcount

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
		{"negatives in a list", "SELECT * FROM t WHERE b IN (-1, -2, 3)", "SELECT * FROM t WHERE b IN ( ? )"},
		{"negatives after keywords", "SELECT -1 FROM t WHERE a BETWEEN -5 AND -2", "SELECT ? FROM t WHERE a BETWEEN ? AND ?"},
		{"binary minus stays", "SELECT x-1, x - -1, 2*-3 FROM t", "SELECT x - ?, x - ?, ? * ? FROM t"},
		{"in list of literals", "SELECT a FROM t WHERE x IN (1,2,3)", "SELECT a FROM t WHERE x IN ( ? )"},
		{"in list of one", "SELECT a FROM t WHERE x IN (7)", "SELECT a FROM t WHERE x IN ( ? )"},
		{"in list of parameters", "SELECT a FROM t WHERE x IN ($1, $2, $3, $4, $5)", "SELECT a FROM t WHERE x IN ( ? )"},
		{"in list of strings", "SELECT a FROM t WHERE x IN ('a', 'b')", "SELECT a FROM t WHERE x IN ( ? )"},
		{"tuples", "SELECT * FROM t WHERE (a, b) IN ((1, 2), (3, 4), (5, 6))", "SELECT * FROM t WHERE ( a, b ) IN ( ( ? ) )"},
		{"multi-row values", "INSERT INTO t (a, b) VALUES (1,'a'),(2,'b'),(3,'c')", "INSERT INTO t ( a, b ) VALUES ( ? )"},
		{"values with parameters", "INSERT INTO t (a, b) VALUES ($1, $2)", "INSERT INTO t ( a, b ) VALUES ( ? )"},
		{"function arguments stay apart", "SELECT f(1), (2) FROM t", "SELECT f ( ? ), ( ? ) FROM t"},
		{"strings", "SELECT 'it''s', E'a\\'b', $$x$$, $q$ y;z $q$, U&'d\\0061t', x'ff' FROM t", "SELECT ?, ?, ?, ?, ?, ? FROM t"},
		{"booleans fold, null stays", "SELECT * FROM t WHERE b = true AND c IS NULL", "SELECT * FROM t WHERE b = ? AND c IS NULL"},
		{"casts and operators", "SELECT x::int, '{1,2}'::int[], data->>'k' FROM t", "SELECT x :: int, ? :: int [ ], data ->> ? FROM t"},
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

func TestNormalizeTraceID(t *testing.T) {
	const id = "4bf92f3577b34da6a3ce929d0e0e4736"
	for in, want := range map[string]string{
		id:                                  id,
		"4BF92F3577B34DA6A3CE929D0E0E4736":  id,
		"00-" + id + "-00f067aa0ba902b7-01": id,
		"":                                  "",
		"xyz":                               "",
		"00000000000000000000000000000000":  "",
		"4bf92f3577b34da6a3ce929d0e0e473g":  "",
	} {
		if got := normalizeTraceID(in); got != want {
			t.Errorf("normalizeTraceID(%q) = %q, want %q", in, got, want)
		}
	}
}
