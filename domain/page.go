package domain

// Page asks for one page of a keyset-paginated list.
type Page struct {
	Limit  int
	Cursor string
}

// Page size bounds of the API.
const (
	DefaultPageLimit = 50
	MaxPageLimit     = 500
)
