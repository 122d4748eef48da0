package hubspot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark/domain"
)

// Setting an app's journal subscriptions from a file: the file's list of
// SubscriptionRequests is the set HubSpot should hold; what HubSpot holds
// and the file does not is deleted, what the file holds and HubSpot does
// not is created, and what both hold is left alone, so that a second run
// changes nothing.

// The scopes of the app's client credentials token that reads and writes
// the journal's subscriptions (the journal guide's "Authentication and
// scopes").
var SubscriptionScopes = []string{"developer.webhooks_journal.subscriptions.read", "developer.webhooks_journal.subscriptions.write"}

// The spec's SubscriptionType and action enums.
var (
	subscriptionTypes = []string{"OBJECT", "ASSOCIATION", "EVENT", "APP_LIFECYCLE_EVENT", "LIST_MEMBERSHIP", "GDPR_PRIVACY_DELETION"}
	journalActions    = []string{"CREATE", "UPDATE", "DELETE", "MERGE", "RESTORE", "ASSOCIATION_ADDED", "ASSOCIATION_REMOVED",
		"SNAPSHOT", "APP_INSTALL", "APP_UNINSTALL", "ADDED_TO_LIST", "REMOVED_FROM_LIST", "GDPR_DELETE"}
)

// objectTypeIDPattern is a CRM object type id: 0-1 (contacts), 2-123 (a
// custom object), ...
var objectTypeIDPattern = regexp.MustCompile(`^[0-9]+-[0-9]+$`)

// ParseSubscriptions reads a file of subscription requests: a JSON array
// of objects with the SubscriptionRequest fields. An error is EINVALID and
// names the line and the field at fault.
func ParseSubscriptions(data []byte) ([]SubscriptionRequest, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return nil, domain.Errorf(domain.EINVALID, "line %d: the file must be a JSON array of subscriptions", lineAt(data, dec.InputOffset()))
	}
	var out []SubscriptionRequest
	for i := 1; dec.More(); i++ {
		start := skipSeparators(data, dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, domain.Errorf(domain.EINVALID, "line %d: subscription %d is not JSON: %s", lineAt(data, jsonErrorOffset(err, dec.InputOffset())), i, err)
		}
		where := fmt.Sprintf("line %d: subscription %d", lineAt(data, start), i)
		strict := json.NewDecoder(bytes.NewReader(raw))
		strict.DisallowUnknownFields()
		var s SubscriptionRequest
		if err := strict.Decode(&s); err != nil {
			return nil, domain.Errorf(domain.EINVALID, "%s: %s", where, strings.TrimPrefix(err.Error(), "json: "))
		}
		if msg := checkSubscription(s); msg != "" {
			return nil, domain.Errorf(domain.EINVALID, "%s: %s", where, msg)
		}
		for j, earlier := range out {
			if sameSubscription(earlier, s) {
				return nil, domain.Errorf(domain.EINVALID, "%s: the same as subscription %d", where, j+1)
			}
		}
		out = append(out, s)
	}
	if _, err := dec.Token(); err != nil {
		return nil, domain.Errorf(domain.EINVALID, "line %d: the array does not end: %s", lineAt(data, dec.InputOffset()), err)
	}
	return out, nil
}

// checkSubscription is what is wrong with s, naming the field; "" if nothing.
func checkSubscription(s SubscriptionRequest) string {
	if !slices.Contains(subscriptionTypes, s.SubscriptionType) {
		return fmt.Sprintf("subscriptionType %q is not one of %s", s.SubscriptionType, strings.Join(subscriptionTypes, ", "))
	}
	needsObjectType := s.SubscriptionType == "OBJECT" || s.SubscriptionType == "ASSOCIATION"
	// The spec's upsert requests: an app lifecycle subscription names its
	// event type and no portal; every other names its portal and actions.
	if s.SubscriptionType == "APP_LIFECYCLE_EVENT" {
		if s.EventTypeID == "" {
			return "eventTypeId is required for APP_LIFECYCLE_EVENT subscriptions"
		}
	} else if s.PortalID <= 0 {
		return "portalId is required for " + s.SubscriptionType + " subscriptions: the installed portal's (hub) id"
	}
	switch {
	case needsObjectType && s.ObjectTypeID == "":
		return "objectTypeId is required for " + s.SubscriptionType + " subscriptions (0-1 contacts, 0-2 companies, 0-3 deals, 0-5 tickets)"
	case s.ObjectTypeID != "" && !objectTypeIDPattern.MatchString(s.ObjectTypeID):
		return fmt.Sprintf("objectTypeId %q is not an object type id such as 0-1", s.ObjectTypeID)
	case len(s.Actions) == 0 && s.SubscriptionType != "APP_LIFECYCLE_EVENT":
		return "actions is required: a list of " + strings.Join(journalActions, ", ")
	case s.PortalID < 0:
		return "portalId must be a portal's (hub) id"
	}
	for i, a := range s.Actions {
		if !slices.Contains(journalActions, a) {
			return fmt.Sprintf("actions[%d] %q is not one of %s", i, a, strings.Join(journalActions, ", "))
		}
		if slices.Contains(s.Actions[:i], a) {
			return fmt.Sprintf("actions[%d] %q is listed twice", i, a)
		}
	}
	for i, p := range s.Properties {
		if strings.TrimSpace(p) == "" || len(p) > 255 {
			return fmt.Sprintf("properties[%d] must be a property's name", i)
		}
		if slices.Contains(s.Properties[:i], p) {
			return fmt.Sprintf("properties[%d] %q is listed twice", i, p)
		}
	}
	return ""
}

// subscriptionKey is what makes two subscriptions the same: everything
// HubSpot's SubscriptionResponse repeats of the request, lists compared
// as sets.
func subscriptionKey(typ string, portal int64, objectType string, actions, properties []string, objects []int64,
	associated []string, lists []int64) string {
	sorted := func(v []string) string { c := slices.Clone(v); slices.Sort(c); return strings.Join(c, ",") }
	ids := func(v []int64) string {
		c := slices.Clone(v)
		slices.Sort(c)
		s := make([]string, len(c))
		for i, n := range c {
			s[i] = strconv.FormatInt(n, 10)
		}
		return strings.Join(s, ",")
	}
	return strings.Join([]string{typ, strconv.FormatInt(portal, 10), objectType, sorted(actions), sorted(properties), ids(objects),
		sorted(associated), ids(lists)}, "|")
}

func (s SubscriptionRequest) key() string {
	return subscriptionKey(s.SubscriptionType, s.PortalID, s.ObjectTypeID, s.Actions, s.Properties, s.ObjectIDs,
		s.AssociatedObjectTypeIDs, s.ListIDs)
}

func (s Subscription) key() string {
	return subscriptionKey(s.SubscriptionType, s.PortalID, s.ObjectTypeID, s.Actions, s.Properties, s.ObjectIDs,
		s.AssociatedObjectTypeIDs, s.ListIDs)
}

func sameSubscription(a, b SubscriptionRequest) bool { return a.key() == b.key() }

// SubscriptionPlan is what setting the subscriptions changes.
type SubscriptionPlan struct {
	Create    []SubscriptionRequest
	Delete    []Subscription
	Unchanged []Subscription
	Created   []Subscription // what Apply created, with HubSpot's ids
}

// PlanSubscriptions compares HubSpot's subscriptions with the wanted ones.
func PlanSubscriptions(have []Subscription, want []SubscriptionRequest) SubscriptionPlan {
	var p SubscriptionPlan
	wanted := map[string]bool{}
	for _, w := range want {
		wanted[w.key()] = true
	}
	held := map[string]bool{}
	for _, h := range have {
		if wanted[h.key()] && !held[h.key()] {
			held[h.key()] = true
			p.Unchanged = append(p.Unchanged, h)
			continue
		}
		p.Delete = append(p.Delete, h)
	}
	for _, w := range want {
		if !held[w.key()] {
			p.Create = append(p.Create, w)
		}
	}
	return p
}

// SetSubscriptions makes the app's subscriptions want's: it creates the
// missing ones, then deletes the others. What it did before a failure is
// in the plan it returns with the error.
func (c *Client) SetSubscriptions(ctx context.Context, tokens *TokenSource, want []SubscriptionRequest) (SubscriptionPlan, error) {
	have, err := c.Subscriptions(ctx, tokens)
	if err != nil {
		return SubscriptionPlan{}, err
	}
	p := PlanSubscriptions(have, want)
	done := SubscriptionPlan{Unchanged: p.Unchanged}
	for _, w := range p.Create {
		s, err := c.CreateSubscription(ctx, tokens, w)
		if err != nil {
			return done, err
		}
		done.Create, done.Created = append(done.Create, w), append(done.Created, s)
	}
	for _, d := range p.Delete {
		if err := c.DeleteSubscription(ctx, tokens, d.ID); err != nil {
			return done, err
		}
		done.Delete = append(done.Delete, d)
	}
	return done, nil
}

// lineAt is the 1-based line of byte offset off in data.
func lineAt(data []byte, off int64) int {
	return 1 + bytes.Count(data[:min(int(off), len(data))], []byte("\n"))
}

// skipSeparators is the offset of the next value after off (past spaces
// and the comma between elements).
func skipSeparators(data []byte, off int64) int64 {
	for off < int64(len(data)) && strings.ContainsRune(" \t\r\n,", rune(data[off])) {
		off++
	}
	return off
}

// jsonErrorOffset is where a syntax error is, else fallback.
func jsonErrorOffset(err error, fallback int64) int64 {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return syn.Offset
	}
	return fallback
}
