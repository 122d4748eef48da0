package views

import "github.com/tidemark/tidemark/domain"

// PageCount is what a list page says of its count (Pages.Count): "1–50 of
// 3,100", "51–100 of more than 1,000", "more than 1,000 match"; "" when
// nothing was counted or nothing matches. bound is the count asked for
// (domain.Page.Count) and shown how many entries the page lists.
func PageCount(info domain.PageInfo, bound, shown int) string {
	if info.Total == 0 || shown == 0 {
		return ""
	}
	more := info.Total > bound
	if more && info.Offset > bound {
		return "more than " + Thousands(int64(bound)) + " match"
	}
	span := Thousands(int64(info.Offset+1)) + "–" + Thousands(int64(info.Offset+shown))
	if more {
		return span + " of more than " + Thousands(int64(bound))
	}
	return span + " of " + Thousands(int64(info.Total))
}
