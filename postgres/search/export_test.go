package search

// What the package's external tests reach inside.
type (
	IdGap    = idGap
	IdRanges = idRanges
)

var FromRanges = fromRanges

const RecordFeedSequenceSQL = recordFeedSequenceSQL

// Gap is the run of ids after after, through through.
func Gap(after, through int64) IdGap { return idGap{after, through} }
