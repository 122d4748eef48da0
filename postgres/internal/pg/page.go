package pg

import (
	"bytes"
	"encoding/base64"
	"encoding/json"

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
