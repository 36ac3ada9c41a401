package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// RequestLog asks for one ID's log and tells a refusal, a body that is not
// a log and a log apart.
func TestRequestLogClassifiesTheAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/stats/requests" {
			http.NotFound(w, r)
			return
		}
		switch r.URL.Query().Get("id") {
		case "refused":
			http.Error(w, `{"error":"bad_parameter"}`, http.StatusBadRequest)
		case "odd":
			w.Write([]byte("<html>"))
		default:
			w.Write([]byte(`{"id":"a b","attempts":{"boreal":2},"log":{"boreal":[{"arrival_ms":0,"status":503},{"arrival_ms":12.5,"status":200}]}}`))
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	rs, err := RequestLog(ctx, nil, srv.URL+"/", "a b")
	if err != nil || rs.ID != "a b" || len(Attempts(rs.Log, "boreal")) != 2 || Attempts(rs.Log, "boreal")[1].Status != 200 || Attempts(rs.Log, "atlas") != nil {
		t.Errorf("a log: %+v, %v", rs, err)
	}
	var status *StatusError
	if _, err := RequestLog(ctx, nil, srv.URL, "refused"); !errors.As(err, &status) || status.Code != http.StatusBadRequest {
		t.Errorf("a 400: %v, want a *StatusError of 400", err)
	}
	var body *BodyError
	if _, err := RequestLog(ctx, nil, srv.URL, "odd"); !errors.As(err, &body) {
		t.Errorf("a page that is not a log: %v, want a *BodyError", err)
	}
}

// One Answer reads a quote's answer and a basket's.
func TestAnswerReadsQuotesAndBaskets(t *testing.T) {
	var q, b Answer
	if err := json.Unmarshal([]byte(`{"request_id":"r1","quotes":[{"supplier":"boreal","total_cents":1200,"stale":true,"age_ms":850}],"failures":[{"supplier":"atlas","code":"timeout","attempts":2}]}`), &q); err != nil {
		t.Fatal(err)
	}
	if q.RequestID != "r1" || len(q.Quotes) != 1 || !q.Quotes[0].Stale || q.Quotes[0].AgeMS == nil || *q.Quotes[0].AgeMS != 850 || q.Failures[0].Code != "timeout" || q.Failures[0].Attempts != 2 {
		t.Errorf("quote: %+v", q)
	}
	if err := json.Unmarshal([]byte(`{"basket_id":"b1","pending":1,"elapsed_ms":2001.5,"items":[{"index":0,"request_id":"r2","status":"partial","failures":[{"supplier":"boreal","code":"upstream_5xx","queued":true}]}]}`), &b); err != nil {
		t.Fatal(err)
	}
	if b.BasketID != "b1" || b.Pending != 1 || b.ElapsedMS != 2001.5 || len(b.Items) != 1 || b.Items[0].Status != "partial" || !b.Items[0].Failures[0].Queued {
		t.Errorf("basket: %+v", b)
	}
}
