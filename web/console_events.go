package web

import "github.com/go-chi/chi/v5"

// eventRoutes registers the console pages of event history and event detail.
func (s *Server) eventRoutes(r chi.Router) {}
