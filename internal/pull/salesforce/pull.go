package salesforce

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// soqlTime is the SOQL dateTime literal form (no fractions, no quotes).
const soqlTime = "2006-01-02T15:04:05Z"

// Pull emits the events of the records of objectType modified in [from,
// to) and of those deleted in it, oldest first, a page of the query at a
// time with the deletions of its span (see pull.Source). objectType is
// lower case, as outbound message events name it (contact;
// merchandise__c). A pull stopped by the budget returns an error wrapping
// ErrBudgetSpent, after emitting the pages it read.
func (s *Source) Pull(ctx context.Context, objectType string, from, to time.Time, emit func([]domain.Event) error) error {
	if !objectTypePattern.MatchString(objectType) {
		return fmt.Errorf("salesforce: object type %q is not a lower-case sObject name such as contact", objectType)
	}
	if !from.Before(to) {
		return fmt.Errorf("salesforce: the window %s to %s is empty", from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	}
	from, to = from.UTC(), to.UTC()
	apiName, err := s.apiName(ctx, objectType)
	if err != nil {
		return err
	}
	// Deletions are one request (getDeleted does not page), read first so
	// that each page of changes goes out with the deletions older than its
	// last record: all of them oldest first.
	deleted, err := s.deletions(ctx, objectType, apiName, from, to)
	if err != nil {
		return err
	}
	r := newReader(objectType, s.revisionField, s.fields[objectType])
	next := s.versionPath("query")
	query := url.Values{"q": {s.soql(objectType, apiName, from, to)}}
	for next != "" {
		var page struct {
			Done           bool              `json:"done"`
			NextRecordsURL string            `json:"nextRecordsUrl"`
			Records        []json.RawMessage `json:"records"`
		}
		if err := s.get(ctx, next, query, &page); err != nil {
			return fmt.Errorf("salesforce: querying %s: %w", apiName, err)
		}
		changed := make([]timed, 0, len(page.Records))
		for _, raw := range page.Records {
			t, err := r.record(raw)
			if err != nil {
				return fmt.Errorf("salesforce: querying %s: %w", apiName, err)
			}
			// The query's window is whole seconds; the window is exact.
			if !t.at.Before(from) && t.at.Before(to) {
				changed = append(changed, t)
			}
		}
		if len(changed) > 0 {
			last := changed[len(changed)-1].at
			older := 0
			for older < len(deleted) && !deleted[older].at.After(last) {
				older++
			}
			changed = append(changed, deleted[:older]...)
			deleted = deleted[older:]
			if err := emit(oldestFirst(changed)); err != nil {
				return err
			}
		}
		next, query = "", nil
		if !page.Done && page.NextRecordsURL != "" {
			// A locator on the same instance, never another address.
			if !strings.HasPrefix(page.NextRecordsURL, "/services/data/") {
				return fmt.Errorf("salesforce: querying %s: nextRecordsUrl %.80q is not a path of the REST API", apiName, page.NextRecordsURL)
			}
			next = page.NextRecordsURL
		}
	}
	if len(deleted) > 0 {
		return emit(oldestFirst(deleted))
	}
	return nil
}

// timed is an event with the instant that orders it: its record's
// SystemModstamp, or its deletion's date.
type timed struct {
	e  domain.Event
	at time.Time
}

// oldestFirst returns the events of ts in the order of their instants.
func oldestFirst(ts []timed) []domain.Event {
	slices.SortStableFunc(ts, func(a, b timed) int { return a.at.Compare(b.at) })
	events := make([]domain.Event, len(ts))
	for i, t := range ts {
		events[i] = t.e
	}
	return events
}

func (s *Source) versionPath(rest string) string {
	return "/services/data/" + s.version + "/" + rest
}

// soql is the query of the records of apiName modified in [from, to), as
// whole seconds around it (SOQL's dateTime literals have none smaller): Id,
// the revision field, the fields the outbound messages carry, and
// SystemModstamp, which the window is over.
func (s *Source) soql(objectType, apiName string, from, to time.Time) string {
	names := []string{"Id", s.revisionField}
	names = append(names, s.fields[objectType]...)
	names = append(names, "SystemModstamp")
	var fields []string
	seen := map[string]bool{}
	for _, n := range names {
		if !seen[strings.ToLower(n)] {
			seen[strings.ToLower(n)] = true
			fields = append(fields, n)
		}
	}
	end := to.Truncate(time.Second)
	if end.Before(to) {
		end = end.Add(time.Second)
	}
	return fmt.Sprintf("SELECT %s FROM %s WHERE SystemModstamp >= %s AND SystemModstamp < %s ORDER BY SystemModstamp ASC",
		strings.Join(fields, ", "), apiName, from.Truncate(time.Second).Format(soqlTime), end.Format(soqlTime))
}

// deletions returns the deletion events of the records of apiName deleted
// in [from, to), oldest first. getDeleted ignores seconds, so it is asked
// for the whole minutes around the window, and the answer is cut to it.
func (s *Source) deletions(ctx context.Context, objectType, apiName string, from, to time.Time) ([]timed, error) {
	end := to.Truncate(time.Minute)
	if end.Before(to) {
		end = end.Add(time.Minute)
	}
	query := url.Values{"start": {from.Truncate(time.Minute).Format(time.RFC3339)}, "end": {end.Format(time.RFC3339)}}
	var answer struct {
		DeletedRecords        []json.RawMessage `json:"deletedRecords"`
		EarliestDateAvailable string            `json:"earliestDateAvailable"`
		LatestDateCovered     string            `json:"latestDateCovered"`
	}
	if err := s.get(ctx, s.versionPath("sobjects/"+apiName+"/deleted/"), query, &answer); err != nil {
		return nil, fmt.Errorf("salesforce: reading the deletions of %s: %w", apiName, err)
	}
	if t, err := time.Parse(restTime, answer.EarliestDateAvailable); err == nil && t.After(from) {
		// The delete log was purged: deletions before t are gone.
		s.log.Warn("salesforce: deletions before the delete log's earliest date cannot be read", "object_type", objectType, "earliest", t)
	}
	r := reader{objectType: objectType}
	deleted := make([]timed, 0, len(answer.DeletedRecords))
	for _, raw := range answer.DeletedRecords {
		t, err := r.deletion(raw)
		if err != nil {
			return nil, fmt.Errorf("salesforce: reading the deletions of %s: %w", apiName, err)
		}
		if !t.at.Before(from) && t.at.Before(to) {
			deleted = append(deleted, t)
		}
	}
	slices.SortStableFunc(deleted, func(a, b timed) int { return a.at.Compare(b.at) })
	return deleted, nil
}

// apiName is the API name of objectType: the standard objects' from a
// table, any other from the org's list of objects (Describe Global), read
// once.
func (s *Source) apiName(ctx context.Context, objectType string) (string, error) {
	if name, ok := standardTypes[objectType]; ok {
		return name, nil
	}
	s.mu.Lock()
	name, ok := s.apiNames[objectType]
	known := len(s.apiNames) > 0
	s.mu.Unlock()
	if ok {
		return name, nil
	}
	if known {
		return "", fmt.Errorf("salesforce: the org has no object type %s", objectType)
	}
	var global struct {
		SObjects []struct {
			Name      string `json:"name"`
			Queryable bool   `json:"queryable"`
		} `json:"sobjects"`
	}
	if err := s.get(ctx, s.versionPath("sobjects/"), nil, &global); err != nil {
		return "", fmt.Errorf("salesforce: listing the org's objects: %w", err)
	}
	names := map[string]string{}
	for _, o := range global.SObjects {
		if o.Queryable && fieldPattern.MatchString(o.Name) {
			names[strings.ToLower(o.Name)] = o.Name
		}
	}
	s.mu.Lock()
	s.apiNames = names
	s.mu.Unlock()
	if name, ok := names[objectType]; ok {
		return name, nil
	}
	return "", fmt.Errorf("salesforce: the org has no object type %s that can be queried", objectType)
}
