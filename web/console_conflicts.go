package web

import "github.com/go-chi/chi/v5"

// conflictRoutes registers the console pages of the conflict queue, conflicts and contact timelines.
func (s *Server) conflictRoutes(r chi.Router) {}
