package api

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
)

// TestTokenIsTheActor: a request with an API token makes its changes as
// that token, named as it was created, from the client's address.
func TestTokenIsTheActor(t *testing.T) {
	t.Parallel()
	store, err := postgres.New(testdb.New(t), []byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := domain.WithActor(t.Context(), domain.Actor{Kind: domain.ActorCLI, Name: "test"})
	tenant, err := store.CreateTenant(ctx, "acme", "")
	if err != nil {
		t.Fatal(err)
	}
	token, err := store.CreateAPIToken(ctx, tenant.ID, domain.NewAPIToken{Name: "billing sync", Access: domain.TokenRead})
	if err != nil {
		t.Fatal(err)
	}
	h := New(store, nil, nil, "", nil)
	var (
		actor domain.Actor
		grant domain.TokenGrant
	)
	r := chi.NewRouter()
	r.Route("/api/v1/tenants/{tenant}", func(r chi.Router) {
		r.Use(h.requireToken)
		r.Get("/whoami", func(w http.ResponseWriter, r *http.Request) {
			actor, _ = domain.ActorFrom(r.Context())
			grant = tokenGrant(r.Context())
		})
	})
	req := httptest.NewRequest(http.MethodGet, "/api/v1/tenants/acme/whoami", nil)
	req.RemoteAddr = "198.51.100.7:4321"
	req.Header.Set("Authorization", "Bearer "+token)
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	want := domain.Actor{Kind: domain.ActorToken, Name: "billing sync", Address: "198.51.100.7", ID: grant.ID}
	if grant.ID == 0 {
		t.Fatal("the grant does not name its token")
	}
	if w.Code != http.StatusOK || actor != want || grant.Access != domain.TokenRead || grant.Tenant.ID != tenant.ID {
		t.Fatalf("%d: actor %+v, grant %+v; want %+v", w.Code, actor, grant, want)
	}
}
