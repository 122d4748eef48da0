package domain

// Page asks for one page of a keyset-paginated list, newest first. Cursor
// continues after a position (older entries); Before asks for the page just
// before one (newer entries, still listed newest first). At most one of
// them is set; neither is the newest page.
type Page struct {
	Limit  int
	Cursor string
	Before string
}

// PageCursors are a page's ways to its neighbours: Next continues past its
// last row (as Page.Cursor), Prev comes back before its first (as
// Page.Before); "" where there is nothing that way.
type PageCursors struct{ Next, Prev string }

// Page size bounds of the API.
const (
	DefaultPageLimit = 50
	MaxPageLimit     = 500
)
