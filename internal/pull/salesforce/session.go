package salesforce

import "context"

// Session returns the connected app's access token and the org's instance
// URL, signing in with the client credentials flow when none is cached.
// The Pub/Sub API (Change Data Capture) authenticates with the same token
// the backfill uses; a server refusing it is told with Forget.
func (s *Source) Session(ctx context.Context) (token, instanceURL string, err error) {
	token, instance, err := s.session(ctx)
	if err != nil {
		return "", "", err
	}
	return token, instance.String(), nil
}

// Forget drops a token a server refused, so that the next Session signs in
// again (unless another request renewed it already).
func (s *Source) Forget(token string) { s.forget(token) }
