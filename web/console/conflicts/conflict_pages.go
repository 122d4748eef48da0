package conflicts

import (
	"net/url"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
)

// queuePages are the links of one list of the conflict queue: its cursors
// travel as list_after and list_before, beside the other list's, which
// stay as they are. bound > 0 says the total was counted up to bound.
func queuePages(base string, query url.Values, list string, c domain.PageCursors, shown, total, bound int) views.Pages {
	link := func(key, cursor string) string {
		q := url.Values{}
		for k, v := range query {
			q[k] = v
		}
		q.Del(list + "_after")
		q.Del(list + "_before")
		if key != "" {
			q.Set(key, cursor)
		}
		return base + queryString(q)
	}
	p := views.Pages{OldestFirst: list == "open"}
	if c.Prev != "" {
		p.Newest, p.Newer = link("", ""), link(list+"_before", c.Prev)
	}
	if c.Next != "" {
		p.Older = link(list+"_after", c.Next)
	}
	if shown < total {
		p.Count = views.CountText(total, bound, list)
	}
	return p
}

// queryString is "?" and the encoded query, or "" for none.
func queryString(q url.Values) string {
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}
