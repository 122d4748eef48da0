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
// around it start, and, when the Page asked, how many entries match.
type PageInfo struct {
	Older string // the Cursor of the next older page; "" on the oldest
	Newer string // the Before of the next newer page; "" on the newest
	// Counted reports that Total and Offset were counted: Total entries
	// match and Offset of them come before (newer than) this page, each up
	// to Page.Count+1, which means more than Page.Count.
	Counted       bool
	Total, Offset int
}

// Page size bounds of the API.
const (
	DefaultPageLimit = 50
	MaxPageLimit     = 500
)
