package analyzer

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStatementNames(t *testing.T) {
	// Three statements that share a prefix longer than a name.
	const common = "SELECT b.id, b.title, b.isbn, b.published_at, b.price_cents, b.stock FROM books b JOIN editions e ON e.book_id = b.id WHERE b.deleted_at IS NULL AND "
	byAuthor := common + "b.author_id = ? ORDER BY b.published_at DESC LIMIT ?"
	byGenre := common + "b.genre_id = ? ORDER BY b.published_at DESC LIMIT ?"
	byPublisher := common + "b.publisher_id = ANY(?) ORDER BY b.title LIMIT ?"
	short := "SELECT count(*) FROM books"
	selectOnly := []string{
		"SELECT b.id, b.title, b.isbn, b.published_at, b.price_cents, b.stock, b.author_id FROM books b WHERE b.id = ?",
		"SELECT b.id, b.title, b.isbn, b.published_at, b.price_cents, b.stock, b.genre_id FROM books b WHERE b.id = ?",
	}
	fps := append([]string{byAuthor, byGenre, byPublisher, short}, selectOnly...)
	got := StatementNames(fps, FingerprintWidth)
	want := map[string]string{
		byAuthor:      "SELECT … FROM books … AND b.author_id = ? ORDER BY b.published_at DESC…",
		byGenre:       "SELECT … FROM books … AND b.genre_id = ? ORDER BY b.published_at DESC…",
		byPublisher:   "SELECT … FROM books … AND b.publisher_id = ANY(?) ORDER BY b.title LIMIT ?",
		short:         short,
		selectOnly[0]: "SELECT b.id, b.title, b.isbn, b.published_at, b.price_cents, b.stock, b.author_id… on books",
		selectOnly[1]: "SELECT b.id, b.title, b.isbn, b.published_at, b.price_cents, b.stock, b.genre_id… on books",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("StatementNames (-want +got):\n%s", diff)
	}
	seen := map[string]string{}
	for fp, name := range got {
		if other, ok := seen[name]; ok {
			t.Errorf("%q and %q share the name %q", fp, other, name)
		}
		seen[name] = fp
		if !strings.Contains(name, "…") && name != strings.Join(strings.Fields(fp), " ") {
			t.Errorf("%q named %q, which is neither it nor marked as shortened", fp, name)
		}
	}

	// Alone, a long statement is cut at a word.
	if got := StatementNames([]string{byAuthor}, FingerprintWidth)[byAuthor]; got != "SELECT … FROM books b JOIN editions e ON e.book_id = b.id WHERE…" {
		t.Errorf("alone: %q", got)
	}
}

// TestStatementNamesTables: a long statement whose cut name shows no table
// (an ORM's CTE) names the tables it touches.
func TestStatementNamesTables(t *testing.T) {
	cte := `with __local_0__ as (select to_json((json_build_object(?::text, (__local_1__."id"), ?::text, (__local_1__."title")))) as "@nodes" from (select __local_1__.* from "public"."books" as __local_1__ where (__local_1__."author_id" = ?) order by __local_1__."year" DESC limit ?) __local_1__) select coalesce((select json_agg(__local_0__."@nodes") from __local_0__), ?::json) as "data"`
	name := StatementNames([]string{cte, "SELECT id FROM authors WHERE id = ?"}, FingerprintWidth)[cte]
	if !strings.Contains(name, `"public"."books"`) || !strings.HasPrefix(name, "with __local_0__") {
		t.Errorf("name %q; want the statement's head and its table", name)
	}
	if got := tablesOf("INSERT INTO orders (a) SELECT x FROM items JOIN skus s ON s.id = x"); strings.Join(got, " ") != "orders items skus" {
		t.Errorf("tablesOf = %q", got)
	}
}
