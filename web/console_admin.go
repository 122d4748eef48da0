package web

import "github.com/go-chi/chi/v5"

// adminRoutes registers the console pages of operators and memberships (admins only).
func (s *Server) adminRoutes(r chi.Router) {}
