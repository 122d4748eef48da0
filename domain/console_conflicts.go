package domain

// ConflictService serves the conflict queue, conflict detail and contact timelines.
type ConflictService interface{}
