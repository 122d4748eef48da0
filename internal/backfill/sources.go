package backfill

import (
	"context"
	"log/slog"
	"slices"
	"strings"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/provider"
)

// FieldStore answers which fields a provider's snapshots of an object type
// carry (postgres/backfills).
type FieldStore interface {
	SnapshotFields(ctx context.Context, tenantID, providerID int64, objectType string) ([]string, error)
}

// Source is one way of reading a provider kind's API, registered with
// Register from the init of its own file in internal/pull/<kind>/, as a
// database/sql driver registers itself: nothing here names a kind. A kind
// may have several sources; a backfill reads the one marked Backfill.
type Source struct {
	// Name is the source's name, such as "hubspot-search": the kind, a
	// dash, and how it reads. Each has its row in docs/contract/backfill.md.
	Name string
	// Kind is the provider kind whose API it reads (internal/provider).
	Kind string
	// Backfill marks the kind's source that backfill passes read.
	Backfill bool
	// New makes the source of one provider.
	New func(ctx context.Context, in SourceInput) (pull.Source, error)
}

// SourceInput is what a source is made from.
type SourceInput struct {
	Provider    domain.ProviderEndpoint
	ObjectTypes []string // the object types the pass pulls
	Credentials pull.Credentials
	Fields      FieldStore
	Log         *slog.Logger
}

// sources holds the registered sources by name.
var sources = map[string]Source{}

// Register makes s available under s.Name. It is called from the init
// function of the source's file and panics on a duplicate name, or on a
// second backfill source of one kind.
func Register(s Source) {
	if s.Name == "" || s.Kind == "" || s.New == nil {
		panic("backfill: a source needs a name, a kind and New")
	}
	if _, dup := sources[s.Name]; dup {
		panic("backfill: source " + s.Name + " registered twice")
	}
	if _, dup := backfillSource(s.Kind); dup && s.Backfill {
		panic("backfill: provider kind " + s.Kind + " has two backfill sources")
	}
	sources[s.Name] = s
}

// Registered lists the registered sources by name.
func Registered() []Source {
	all := make([]Source, 0, len(sources))
	for _, s := range sources {
		all = append(all, s)
	}
	slices.SortFunc(all, func(a, b Source) int { return strings.Compare(a.Name, b.Name) })
	return all
}

// backfillSource is the source backfill passes of providers of kind read.
func backfillSource(kind string) (Source, bool) {
	for _, s := range sources {
		if s.Kind == kind && s.Backfill {
			return s, true
		}
	}
	return Source{}, false
}

// NewSources makes, for a pass, the backfill source of the provider's
// kind; an EINVALID error for a kind with none.
func NewSources(fields FieldStore, log *slog.Logger) Sources {
	return func(ctx context.Context, p domain.ProviderEndpoint, objectTypes []string, c pull.Credentials) (pull.Source, error) {
		s, ok := backfillSource(p.Kind)
		if !ok {
			return nil, domain.Errorf(domain.EINVALID, "provider kind %s has no API to pull from: backfill reads %s", p.Kind, backfilled())
		}
		return s.New(ctx, SourceInput{Provider: p, ObjectTypes: objectTypes, Credentials: c, Fields: fields, Log: log})
	}
}

// backfilled names the providers backfill reads, by the titles of their
// kinds: "HubSpot and Salesforce".
func backfilled() string {
	var kinds []string
	for _, s := range Registered() {
		if s.Backfill {
			kinds = append(kinds, s.Kind)
		}
	}
	if len(kinds) == 0 {
		return "none in this build"
	}
	slices.Sort(kinds)
	titles := make([]string, len(kinds))
	for i, kind := range kinds {
		titles[i] = kind
		if k, ok := provider.Lookup(kind); ok && k.Form().Title != "" {
			titles[i] = k.Form().Title
		}
	}
	if len(titles) == 1 {
		return titles[0]
	}
	return strings.Join(titles[:len(titles)-1], ", ") + " and " + titles[len(titles)-1]
}
