package search

import "github.com/jackc/pgx/v5/pgtype"

// idGap is a run of a feed's ids, (after, through]: a range IndexSearch
// reads, or, in searchProgress.gaps, ids no committed row held when it read
// past them.
type idGap struct{ after, through int64 }

// maxSearchGaps bounds the runs search_progress keeps while a long
// transaction holds pendingID back; beyond it they become the one run that
// spans them, which costs a second read of ids that were not missing.
const maxSearchGaps = 1000

// idRanges is how search_progress.gaps (int8multirange) travels.
type idRanges = pgtype.Multirange[pgtype.Range[pgtype.Int8]]

// splitGaps divides gaps, in ascending order, into the runs up to through
// and the rest.
func splitGaps(gaps []idGap, through int64) (upTo, rest []idGap) {
	for _, g := range gaps {
		switch {
		case g.through <= through:
			upTo = append(upTo, g)
		case g.after < through:
			upTo = append(upTo, idGap{g.after, through})
			rest = append(rest, idGap{through, g.through})
		default:
			rest = append(rest, g)
		}
	}
	return upTo, rest
}

// boundGaps returns gaps, or the one run that spans them when there are
// more than maxSearchGaps.
func boundGaps(gaps []idGap) []idGap {
	if len(gaps) <= maxSearchGaps {
		return gaps
	}
	return []idGap{{gaps[0].after, gaps[len(gaps)-1].through}}
}

// toRanges writes gaps as ranges of ids [after+1, through+1), the form
// PostgreSQL keeps an int8 range in.
func toRanges(gaps []idGap) idRanges {
	ranges := make(idRanges, len(gaps))
	for i, g := range gaps {
		ranges[i] = pgtype.Range[pgtype.Int8]{
			Lower: pgtype.Int8{Int64: g.after + 1, Valid: true}, Upper: pgtype.Int8{Int64: g.through + 1, Valid: true},
			LowerType: pgtype.Inclusive, UpperType: pgtype.Exclusive, Valid: true,
		}
	}
	return ranges
}

// fromRanges reads ranges as toRanges wrote them.
func fromRanges(ranges idRanges) []idGap {
	gaps := make([]idGap, 0, len(ranges))
	for _, r := range ranges {
		gaps = append(gaps, idGap{r.Lower.Int64 - 1, r.Upper.Int64 - 1})
	}
	return gaps
}
