package domain

import (
	"strings"
	"time"
	"unicode/utf8"
)

// MaxSearchBytes bounds a search query: longer text is refused rather than
// cut, so what was searched is always what was typed.
const MaxSearchBytes = 200

// StaleBadgeWindow is how far back the "stale events" badge of a record
// counts.
const StaleBadgeWindow = 7 * 24 * time.Hour

// RecordQuery narrows the records directory; zero fields match everything.
type RecordQuery struct {
	Provider      string
	ObjectType    string
	OpenConflicts bool      // only records with an open revision conflict
	From          time.Time // changed at or after
	Before        time.Time // changed before
	// Search matches record ids by prefix and the words of the current
	// snapshot (websearch syntax: "quoted phrases", -excluded words, or).
	Search    string
	WithTests bool // list console test events' records (snapshot.IsTestRecord) too; RecordDirectoryPage only
}

// Validate returns an EINVALID error describing the first unusable filter.
func (q RecordQuery) Validate() error {
	if err := validUTF8("provider", q.Provider, "object type", q.ObjectType); err != nil {
		return err
	}
	if !q.From.IsZero() && !q.Before.IsZero() && !q.From.Before(q.Before) {
		return Errorf(EINVALID, "the start of the time range must be before its end")
	}
	return ValidateSearch(q.Search)
}

// ValidateSearch checks the text of a search box (the q parameter of the
// API and the console).
func ValidateSearch(s string) error {
	// PostgreSQL refuses text that is not UTF-8 with an error about stored
	// values; the caller is told which field instead.
	if !utf8.ValidString(s) {
		return Errorf(EINVALID, "the search (q) is not valid UTF-8")
	}
	if len(s) > MaxSearchBytes {
		return Errorf(EINVALID, "the search is %d bytes long; search for at most %d", len(s), MaxSearchBytes)
	}
	if strings.ContainsRune(s, 0) || strings.ContainsRune(s, HighlightStart) || strings.ContainsRune(s, HighlightStop) {
		return Errorf(EINVALID, "the search contains control characters")
	}
	return nil
}

// RecordBadges are the marks shown beside a record in the directory and on
// its timeline.
type RecordBadges struct {
	OpenConflicts int  // open revision conflicts of the record
	StaleEvents   int  // stale events received within StaleBadgeWindow
	Deleted       bool // the provider deleted the record (HubSpot)
}

// RecordSummary is one row of the records directory.
type RecordSummary struct {
	Provider         string
	ObjectType       string
	ObjectID         string
	Revision         int64 // ForgottenRevision after a reset
	UpdatedAt        time.Time
	ApplicationCount int
	Badges           RecordBadges
	// Headline is the part of the snapshot that matched the search, with
	// matches between HighlightStart and HighlightStop; empty without a
	// search or when only the id matched.
	Headline string
	Name     string // display name; Name, Matches, Test: RecordDirectoryPage only
	Matches  []FieldMatch
	Test     bool
}

// FieldMatch is a snapshot's field (dotted path) a search matched, its value in parts.
type FieldMatch struct {
	Field string
	Parts []HighlightPart
}

// Ref names the summarised record.
func (r RecordSummary) Ref() RecordRef {
	return RecordRef{Provider: r.Provider, ObjectType: r.ObjectType, ObjectID: r.ObjectID}
}

// Highlight delimiters in a search headline: control characters, which
// storage strips from the searched text before marking the matches.
const (
	HighlightStart = '\x02'
	HighlightStop  = '\x03'
)

// HighlightPart is a piece of a headline: matched text or the text between
// matches.
type HighlightPart struct {
	Text    string
	Matched bool
}

// validUTF8 refuses the first of the named filter values (name, value
// pairs) that is not valid UTF-8, naming it.
func validUTF8(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if !utf8.ValidString(pairs[i+1]) {
			return Errorf(EINVALID, "the %s filter is not valid UTF-8", pairs[i])
		}
	}
	return nil
}
