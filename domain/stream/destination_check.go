package stream

import (
	"github.com/tidemark/tidemark/domain"
)

// Bounds of what an owner gives for a destination.
const (
	MaxDestinationURLBytes = 2048
	MaxSubjectBytes        = 200
	MaxNATSCredsBytes      = 16 << 10
	MaxNATSNKeyBytes       = 128
	MaxNATSTLSCABytes      = 32 << 10
)

// Check validates what every kind of destination shares (its object type,
// types and max in flight) and returns nd with their defaults filled in.
// The kind's own fields (its target, credentials and format) are its
// kind's to check: internal/sink.CheckForm checks them and runs this.
func (nd NewDestination) Check() (NewDestination, error) {
	if len(nd.ObjectType) > domain.MaxObjectTypeBytes {
		return nd, domain.Errorf(domain.EINVALID, "object_type is %d bytes; at most %d", len(nd.ObjectType), domain.MaxObjectTypeBytes)
	}
	types := nd.Types
	if len(types) == 0 && nd.Format == FormatSlack {
		types = DefaultSlackTypes
	}
	types, err := CheckTypes(types)
	if err != nil {
		return nd, err
	}
	nd.Types = types
	switch {
	case nd.MaxInFlight == 0:
		nd.MaxInFlight = DefaultMaxInFlight
	case nd.MaxInFlight < 1 || nd.MaxInFlight > MaxMaxInFlight:
		return nd, domain.Errorf(domain.EINVALID, "max_in_flight must be from 1 to %d, got %d", MaxMaxInFlight, nd.MaxInFlight)
	}
	return nd, nil
}
