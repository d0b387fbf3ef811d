package app_test

import (
	"context"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/replaykit/replay/examples/orders/app"
	"github.com/replaykit/replay/internal/pgtest"
)

// TestChange: each APP_CHANGE answers differently from the unchanged
// service, in the one way it names.
func TestChange(t *testing.T) {
	ctx := context.Background()
	get := func(t *testing.T, change string) (list, order map[string]any, post int) {
		db := pgtest.Database(t)
		a, base := startApp(t, app.Config{DatabaseURL: db, Change: change})
		if err := app.Reset(ctx, a.DB(), 5); err != nil {
			t.Fatal(err)
		}
		call(t, "GET", base+"/orders", nil).decode(t, &list)
		call(t, "GET", base+"/orders/2", nil).decode(t, &order)
		return list, order, call(t, "POST", base+"/orders", app.SeedOrder(1)).status
	}
	_, plainOrder, plainPost := get(t, "")
	if _, ok := plainOrder["id"].(float64); !ok || plainOrder["customer"] == nil || plainPost != http.StatusCreated {
		t.Fatalf("unchanged: order %v, POST %d", plainOrder, plainPost)
	}
	t.Run("type", func(t *testing.T) {
		list, order, _ := get(t, app.ChangeType)
		first := list["orders"].([]any)[0].(map[string]any)
		if order["id"] != "2" || first["id"] != "5" {
			t.Errorf("ids %#v and %#v, want strings", order["id"], first["id"])
		}
	})
	t.Run("drop", func(t *testing.T) {
		_, order, _ := get(t, app.ChangeDrop)
		if _, ok := order["customer"]; ok || order["status"] == nil {
			t.Errorf("order %v, want it without customer", order)
		}
	})
	t.Run("reorder", func(t *testing.T) {
		_, order, _ := get(t, app.ChangeReorder)
		items, want := order["items"].([]any), slices.Clone(plainOrder["items"].([]any))
		slices.Reverse(want)
		if len(items) < 2 || !reflect.DeepEqual(items, want) {
			t.Errorf("items %v, want %v", items, want)
		}
	})
	t.Run("status", func(t *testing.T) {
		if _, _, post := get(t, app.ChangeStatus); post != http.StatusOK {
			t.Errorf("POST /orders = %d, want 200", post)
		}
	})
	if _, err := app.ParseEnv(func(k string) string {
		return map[string]string{"DATABASE_URL": "postgres://x", "APP_CHANGE": "colour"}[k]
	}); err == nil || !strings.Contains(err.Error(), `APP_CHANGE "colour": want one of type, drop, reorder, status`) {
		t.Errorf("bad APP_CHANGE: %v", err)
	}
}
