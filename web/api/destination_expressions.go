package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/changejson"
	"github.com/tidemark/tidemark/internal/shape"
	"github.com/tidemark/tidemark/web/httpx"
)

// expressionField is a PATCH field that may be absent (unchanged), null
// or "" (removed), or an expression.
type expressionField struct {
	set   bool
	value string
}

func (f *expressionField) UnmarshalJSON(b []byte) error {
	f.set = true
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	return json.Unmarshal(b, &f.value)
}

// ptr is the field as stream.DestinationUpdate takes it.
func (f expressionField) ptr() *string {
	if !f.set {
		return nil
	}
	return &f.value
}

// handleUpdateDestination answers PATCH destinations/{id} {"filter",
// "transform"}: each field given is set, null removing it; an expression
// that does not compile is a 400 and changes nothing.
func (h destinationHandlers) handleUpdateDestination(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Filter    expressionField `json:"filter"`
		Transform expressionField `json:"transform"`
	}
	if !decodeBody(w, r, &req, `{"filter": "\"lifecyclestage\" in change.changed", "transform": null}`) {
		return
	}
	u := stream.DestinationUpdate{Filter: req.Filter.ptr(), Transform: req.Transform.ptr()}
	h.answerDestination(w, r, func(ctx context.Context, tenant, id int64) error {
		_, err := h.store.UpdateDestination(ctx, tenant, id, u)
		return err
	})
}

// triedJSON is what a destination with the expressions tried would make
// of one change.
type triedJSON struct {
	ID      string          `json:"id"`
	Cursor  string          `json:"cursor"`
	Matched bool            `json:"matched"`
	Data    json.RawMessage `json:"data,omitempty"`
	Error   string          `json:"error,omitempty"`
}

// handleTestExpression answers POST destinations/test-expression
// {"filter"?, "transform"?, "after"?, "limit"?}: the expressions tried on
// the tenant's newest changes, or those after the cursor after; per change
// whether it matched, and the data the transform made of it or the error.
// Nothing is stored.
func (h destinationHandlers) handleTestExpression(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Filter    string  `json:"filter"`
		Transform string  `json:"transform"`
		After     *string `json:"after"`
		Limit     int     `json:"limit"`
	}
	if !decodeBody(w, r, &req, `{"filter": "change.object_type == \"contact\"", "transform": "{\"email\": change.snapshot.email}", "after": "c1_42", "limit": 20}`) {
		return
	}
	var after *int64
	if req.After != nil {
		position, err := stream.ParseCursor(*req.After)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		after = &position
	}
	ctx := r.Context()
	tried, next, err := shape.Try(ctx, h.store, tokenTenant(ctx).ID, req.Filter, req.Transform, after, req.Limit)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := make([]triedJSON, len(tried))
	for i, t := range tried {
		out[i] = triedJSON{ID: t.Change.ID(), Cursor: t.Change.Cursor(), Matched: t.Matched, Data: t.Data, Error: t.Error}
		if t.Matched && t.Data == nil && req.Transform == "" {
			out[i].Data, _ = json.Marshal(changejson.From(t.Change))
		}
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"changes": out, "next_cursor": stream.FormatCursor(next)})
}
