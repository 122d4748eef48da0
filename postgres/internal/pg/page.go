package pg

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"

	"github.com/tidemark/tidemark/domain"
)

func PageLimit(p domain.Page) int {
	switch {
	case p.Limit <= 0:
		return domain.DefaultPageLimit
	case p.Limit > domain.MaxPageLimit:
		return domain.MaxPageLimit
	}
	return p.Limit
}

// Trim cuts a list fetched with one extra row down to the page and reports
// whether the extra row was there.
func Trim[T any](rows []T, limit int) ([]T, bool) {
	if len(rows) > limit {
		return rows[:limit], true
	}
	return rows, false
}

// Cursors are opaque to callers: the base64url JSON of the last row's sort key.
func EncodeCursor(key any) string {
	b, _ := json.Marshal(key)
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor leaves key untouched when cursor is empty.
func DecodeCursor(cursor string, key any) error {
	if cursor == "" {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return InvalidCursor()
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(key); err != nil {
		return InvalidCursor()
	}
	return nil
}

func InvalidCursor() error { return domain.Errorf(domain.EINVALID, "invalid cursor") }

// Keyed is a row of a list with its sort key, which a cursor encodes.
type Keyed[T, K any] struct {
	Row T
	Key K
}

// Fetch reads up to limit+1 rows of a list from a position (the zero key
// and start false: from the newest): newest first after it, or, with
// newer, oldest first before it.
type Fetch[T, K any] func(after K, start, newer bool, limit int) ([]Keyed[T, K], error)

// Both pages a list both ways: page.Cursor continues after its key,
// page.Before reads the rows just newer than its key (a page of fewer
// than limit rows there is the newest page instead). The rows come back
// newest first with where the pages around them start.
func Both[T, K any](page domain.Page, fetch Fetch[T, K]) ([]Keyed[T, K], domain.PageInfo, error) {
	var (
		info  domain.PageInfo
		after K
	)
	limit := PageLimit(page)
	if page.Before != "" {
		if err := DecodeCursor(page.Before, &after); err != nil {
			return nil, info, err
		}
		rows, err := fetch(after, true, true, limit)
		if err != nil {
			return nil, info, err
		}
		if len(rows) >= limit {
			rows, more := Trim(rows, limit)
			slices.Reverse(rows)
			info.Next = EncodeCursor(rows[len(rows)-1].Key)
			if more {
				info.Prev = EncodeCursor(rows[0].Key)
			}
			return rows, info, nil
		}
		page.Cursor = ""
	}
	if err := DecodeCursor(page.Cursor, &after); err != nil {
		return nil, info, err
	}
	rows, err := fetch(after, page.Cursor != "", false, limit)
	if err != nil {
		return nil, info, err
	}
	rows, more := Trim(rows, limit)
	if more {
		info.Next = EncodeCursor(rows[len(rows)-1].Key)
	}
	if page.Cursor != "" {
		info.Prev = page.Cursor
		if len(rows) > 0 {
			info.Prev = EncodeCursor(rows[0].Key)
		}
	}
	return rows, info, nil
}

// Rows are the rows of keyed rows.
func Rows[T, K any](keyed []Keyed[T, K]) []T {
	out := make([]T, len(keyed))
	for i, k := range keyed {
		out[i] = k.Row
	}
	return out
}

// Ascending turns a list statement that reads newest first after a
// position into one that reads oldest first before it: its keyset
// comparisons against @after_ parameters and its sort order are reversed.
func Ascending(sql string) string {
	return ascending.Replace(sql)
}

var ascending = strings.NewReplacer(" DESC", " ASC", "<= @after_at", ">= @after_at", ") < (@after_", ") > (@after_")
