package web

import "github.com/go-chi/chi/v5"

// providerRoutes registers the console pages of providers, their secrets, scopes and deliveries, and API tokens.
func (s *Server) providerRoutes(r chi.Router) {}
