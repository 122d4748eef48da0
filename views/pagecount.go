package views

import (
	"strconv"

	"github.com/tidemark/tidemark/domain"
)

// PageCount is what a list page says of its count (Pages.Count): "1–50 of
// 3,100", "51–100 of more than 1,000", "more than 1,000 match"; "" when
// nothing was counted or nothing matches. bound is the count asked for
// (domain.Page.Count) and shown how many entries the page lists.
func PageCount(info domain.PageInfo, bound, shown int) string {
	if !info.Counted || info.Total == 0 || shown == 0 {
		return ""
	}
	more := info.Total > bound
	if more && info.Offset > bound {
		return "more than " + Thousands(bound) + " match"
	}
	span := Thousands(info.Offset+1) + "–" + Thousands(info.Offset+shown)
	if more {
		return span + " of more than " + Thousands(bound)
	}
	return span + " of " + Thousands(info.Total)
}

// Thousands writes n with commas between groups of three digits.
func Thousands(n int) string {
	s := strconv.Itoa(n)
	neg := ""
	if n < 0 {
		neg, s = "-", s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return neg + s
}
