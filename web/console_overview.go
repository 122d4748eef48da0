package web

import "github.com/go-chi/chi/v5"

// overviewRoutes registers the console pages of the overview.
func (s *Server) overviewRoutes(r chi.Router) {}
