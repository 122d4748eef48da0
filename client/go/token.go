package tidemark

import (
	"context"
	"net/http"
)

// WithToken sends token in the Authorization header of every request: a
// tenant's API token, or an admin token (tmka_...) for the admin routes.
func WithToken(token string) ClientOption {
	return WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+token)
		return nil
	})
}
