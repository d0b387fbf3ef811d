package replayer

import (
	"context"
	"net/http"

	"github.com/replaykit/replay/snapshots"
)

// The stage's requests recorded over HTTP/2 go over HTTP/2 (h2.go) with
// the headers the stage rewrote (a fresh token, cookies, moved times);
// REST ones with its URL and body too, while a gRPC call's messages go as
// recorded (protobuf, which the stage does not rewrite). Their answers are
// not kept as the source of later requests' values.

// stageRoundTripH2 sends req, recorded over HTTP/2, over HTTP/2.
func (r *Replayer) stageRoundTripH2(ctx context.Context, t *template, req *staged, tp string, res *snapshots.Result, tap *bodyTap) (liveAnswer, error) {
	t2 := *t
	t2.header = req.header
	t2.h2 = &h2Template{grpc: t.h2.grpc} // its own HEADERS block
	if t.h2.grpc == nil {
		t2.url, t2.uri, t2.body = req.url, req.url.RequestURI(), req.body
	}
	status, n, err := r.sendH2(ctx, &t2, tp, res, tap)
	return liveAnswer{status: status, n: n}, err
}

// refusedToken reports whether the target refused the request's token:
// 401, or a gRPC call's UNAUTHENTICATED.
func refusedToken(t *template, ans liveAnswer, res *snapshots.Result) bool {
	if t.h2 != nil && t.h2.grpc != nil {
		return res.GRPCStatus == 16
	}
	return ans.status == http.StatusUnauthorized
}
