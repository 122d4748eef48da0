package domain

// Page asks for one page of a keyset-paginated list, newest first. Cursor
// continues after a position (older entries); Before asks for the page just
// before one (newer entries, still listed newest first). At most one of
// them is set; neither is the newest page.
type Page struct {
	Limit  int
	Cursor string
	Before string
	Count  int // when positive, a list that reports PageInfo counts up to Count
}

// PageInfo is a page's cursors (Next: older, Prev: newer) and, when
// counted (else 0), how many entries match (Total) and come before it
// (Offset), each up to Page.Count+1 (meaning more than Page.Count).
type PageInfo struct {
	PageCursors
	Total, Offset int
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
