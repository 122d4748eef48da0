// Package stream holds the nouns and rules of the change stream out: the
// changes of a tenant's feed (change.go), the destinations they are pushed
// to (destination.go) and what a sender needs from storage. Like domain, it
// imports only the standard library and domain.
package stream
