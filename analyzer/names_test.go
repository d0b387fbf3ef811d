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
		selectOnly[0]: "SELECT b.id, b.title, b.isbn, b.published_at, b.price_cents, b.stock, b.author_id…",
		selectOnly[1]: "SELECT b.id, b.title, b.isbn, b.published_at, b.price_cents, b.stock, b.genre_id…",
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
