package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// jsonTime formats times as RFC 3339 in UTC.
type jsonTime time.Time

func (t jsonTime) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(t).UTC().Format(time.RFC3339Nano) + `"`), nil
}

func optionalTime(t *time.Time) *jsonTime {
	if t == nil {
		return nil
	}
	v := jsonTime(*t)
	return &v
}

func optionalString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func optionalInt(n int64) *int64 {
	if n == 0 {
		return nil
	}
	return &n
}

// contactID is the object id of a contact and null for other object types.
func contactID(objectType, objectID string) *string {
	if objectType != domain.ContactType {
		return nil
	}
	return optionalString(objectID)
}

// nextCursor is null on the last page.
func nextCursor(c string) *string { return optionalString(c) }

// page reads ?limit= and ?cursor=. A limit above the maximum is capped.
func page(r *http.Request) (domain.Page, error) {
	p := domain.Page{Limit: domain.DefaultPageLimit, Cursor: r.URL.Query().Get("cursor")}
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return p, domain.Errorf(domain.EINVALID, "limit must be a positive integer (at most %d), got %q", domain.MaxPageLimit, v)
		}
		p.Limit = min(n, domain.MaxPageLimit)
	}
	return p, nil
}
