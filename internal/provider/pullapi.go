package provider

import "github.com/tidemark/tidemark/domain/pull"

// puller is implemented by kinds whose providers have an API that backfill
// pulls from (domain/pull), declaring the credentials it takes.
type puller interface {
	PullAPI() pull.API
}

// PullAPI is what credentials the API of a provider of kind takes:
// pull.NoAPI for a kind without one, or one this build does not know.
func PullAPI(kind string) pull.API {
	if p, ok := registry[kind].(puller); ok {
		return p.PullAPI()
	}
	return pull.NoAPI
}
