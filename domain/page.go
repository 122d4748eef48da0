package domain

// Page asks for one page of a keyset-paginated list, newest first. Cursor
// continues after a position (older entries); Before asks for the page just
// before one (newer entries, still listed newest first). At most one of
// them is set; neither is the newest page.
type Page struct {
	Limit  int
	Cursor string
	Before string
	// Count, when positive, asks a list that reports PageInfo to count the
	// entries that match, up to Count.
	Count int
}

// PageInfo is what a list says about one of its pages: where the pages
// around it start (Next: the older page's Cursor, "" on the oldest; Prev:
// the newer page's Before, "" on the newest), and, when the Page asked,
// how many entries match.
type PageInfo struct {
	PageCursors
	// Counted reports that Total and Offset were counted: Total entries
	// match and Offset of them come before (newer than) this page, each up
	// to Page.Count+1, which means more than Page.Count.
	Counted       bool
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
