package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/httpx"
)

type personAccountJSON struct {
	Domain string `json:"domain"`
	Name   string `json:"name"`
}

type personTaskJSON struct {
	ID     int64  `json:"id"`
	Status string `json:"status"`
}

type personJSON struct {
	Email     string             `json:"email"`
	Name      string             `json:"name"`
	Account   *personAccountJSON `json:"account"`
	Tasks     []personTaskJSON   `json:"tasks"`
	Campaigns []string           `json:"campaigns"`
}

func newPersonJSON(p domain.Person) personJSON {
	out := personJSON{Email: p.Email, Name: p.Name, Tasks: make([]personTaskJSON, len(p.Tasks)),
		Campaigns: make([]string, len(p.Campaigns))}
	if p.Account != nil {
		out.Account = &personAccountJSON{Domain: p.Account.Domain, Name: p.Account.Name}
	}
	for i, t := range p.Tasks {
		out.Tasks[i] = personTaskJSON{ID: t.ID, Status: t.Status}
	}
	for i, c := range p.Campaigns {
		out.Campaigns[i] = c.Campaign
	}
	return out
}

// handlePeople answers GET people?email=: that person (or none), or
// without an email the newest people first, a page at a time.
func (h peopleHandlers) handlePeople(w http.ResponseWriter, r *http.Request) {
	email := strings.TrimSpace(r.URL.Query().Get("email"))
	out, next, ok := listPage(h, w, r, func(ctx context.Context, p domain.Page) ([]domain.Person, string, error) {
		return h.store.People(ctx, tokenTenant(ctx).ID, email, p)
	}, newPersonJSON)
	if !ok {
		return
	}
	if email != "" {
		httpx.WriteJSON(w, http.StatusOK, map[string]any{"people": out})
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"people": out, "next_cursor": nextCursor(next)})
}
