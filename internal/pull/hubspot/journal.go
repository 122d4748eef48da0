package hubspot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// The local Webhooks Journal of an installed portal, as the spec
// PublicApiSpecs/Webhooks Journal/Webhooks Journal/Rollouts/284944/2026-03/webhooksJournal.json
// of HubSpot/HubSpot-public-api-spec-collection and the guide
// https://developers.hubspot.com/docs/api-reference/latest/webhooks-journal/journal-entries/guide.md
// describe it: GET earliest and latest (a JournalFetchResponse
// {currentOffset, url, expiresAt}), GET batch/{offset}/next/{count} (a
// BatchResponseJournalFetchResponse {status, results: [JournalFetchResponse]}),
// each with ?installPortalId=; a result's url is a signed URL of the
// entry's data, fetched without the bearer token. A next whose offset
// expired (3 days of history) is a 404.
const journalPath = "/webhooks-journal/journal-local/2026-03"

// ErrOffsetExpired is the journal refusing an offset (404): it is older
// than the journal keeps, or unknown. The reader restarts from Earliest
// after filling the gap another way (CRM search).
var ErrOffsetExpired = errors.New("the HubSpot journal no longer holds this offset")

// ErrJournalEmpty is earliest or latest answering 404: no entry yet.
var ErrJournalEmpty = errors.New("the HubSpot journal holds no entry")

// MaxJournalBatch bounds count in Next (the spec sets no maximum; the
// 2027-03-beta batch read takes up to 100).
const MaxJournalBatch = 100

// JournalPage is one journal entry's place: its offset and the signed URL
// of its data, good until ExpiresAt.
type JournalPage struct {
	Offset    string    `json:"currentOffset"`
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expiresAt"`
}

type journalBatch struct {
	Status  string        `json:"status"`
	Results []JournalPage `json:"results"`
}

// Journal reads the local journal of one installed portal.
type Journal struct {
	c      *Client
	tokens *TokenSource
	portal int64
}

// Journal returns the reader of portal's local journal, authenticated by
// tokens (the app's client credentials or the install's tokens).
func (c *Client) Journal(tokens *TokenSource, portal int64) *Journal {
	return &Journal{c: c, tokens: tokens, portal: portal}
}

// Earliest is the oldest entry the journal holds; ErrJournalEmpty if none.
func (j *Journal) Earliest(ctx context.Context) (JournalPage, error) { return j.end(ctx, "earliest") }

// Latest is the newest entry; ErrJournalEmpty if none.
func (j *Journal) Latest(ctx context.Context) (JournalPage, error) { return j.end(ctx, "latest") }

func (j *Journal) end(ctx context.Context, which string) (JournalPage, error) {
	var p JournalPage
	err := j.c.authed(ctx, j.tokens, request{method: http.MethodGet, what: "read the journal's " + which + " entry",
		url: j.url("/" + which)}, &p)
	if statusOf(err) == http.StatusNotFound {
		return JournalPage{}, fmt.Errorf("hubspot: portal %d: %w", j.portal, ErrJournalEmpty)
	}
	return p, err
}

// Next is up to count entries after offset, oldest first; none when the
// journal holds nothing newer. An expired offset is ErrOffsetExpired.
func (j *Journal) Next(ctx context.Context, offset string, count int) ([]JournalPage, error) {
	if offset == "" || count < 1 || count > MaxJournalBatch {
		return nil, fmt.Errorf("hubspot: journal next needs an offset and a count from 1 to %d; got %q, %d", MaxJournalBatch, offset, count)
	}
	var b journalBatch
	err := j.c.authed(ctx, j.tokens, request{method: http.MethodGet, what: "read the journal's next entries",
		url: j.url("/batch/" + url.PathEscape(offset) + "/next/" + strconv.Itoa(count))}, &b)
	if statusOf(err) == http.StatusNotFound {
		return nil, fmt.Errorf("hubspot: portal %d, offset %s: %w", j.portal, offset, ErrOffsetExpired)
	}
	return b.Results, err
}

func (j *Journal) url(path string) string {
	return j.c.base + journalPath + path + "?installPortalId=" + strconv.FormatInt(j.portal, 10)
}

// Entries fetches and parses the data of p from its signed URL, without
// the bearer token (the URL's signature is its authority). Each entry's
// Offset is p's when the data does not give one.
func (j *Journal) Entries(ctx context.Context, p JournalPage) ([]JournalEntry, error) {
	var raw []byte
	if err := j.c.send(ctx, request{method: http.MethodGet, url: p.URL, what: "read a journal entry's data",
		secrets: []string{p.URL}}, &raw); err != nil {
		return nil, err
	}
	entries, err := ParseJournalEntries(raw)
	if err != nil {
		return nil, fmt.Errorf("hubspot: journal entry %s: %w", p.Offset, err)
	}
	for i := range entries {
		if entries[i].Offset == "" {
			entries[i].Offset = p.Offset
		}
	}
	return entries, nil
}

// The journal's actions (the spec's action enum).
const (
	ActionCreate     = "CREATE"
	ActionUpdate     = "UPDATE"
	ActionDelete     = "DELETE"
	ActionMerge      = "MERGE"
	ActionRestore    = "RESTORE"
	ActionSnapshot   = "SNAPSHOT"
	ActionGDPRDelete = "GDPR_DELETE"
)

// JournalEntry is one change in the journal. [unverified] The format of
// the data behind a JournalPage's url is not in the spec and the guide's
// example could not be read here: the fields follow the spec's vocabulary
// (subscriptionType, objectTypeId, objectId, portalId, action, properties)
// and the webhooks v3 payload's (appId, eventId, occurredAt in epoch
// milliseconds, changeSource, primaryObjectId/mergedObjectIds for merges),
// as providers-4.md does.
type JournalEntry struct {
	Offset           string
	PortalID         int64
	AppID            int64
	SubscriptionID   int64
	SubscriptionType string // OBJECT, ASSOCIATION, GDPR_PRIVACY_DELETION, ...
	ObjectTypeID     string // "0-1" contacts, "0-2" companies, "0-3" deals
	ObjectID         int64
	Action           string // CREATE, UPDATE, DELETE, MERGE, RESTORE, SNAPSHOT, GDPR_DELETE, ...
	OccurredAt       time.Time
	EventID          string
	ChangeSource     string
	// Properties are the values the entry carries: the changed ones for
	// UPDATE, all subscribed ones for CREATE and SNAPSHOT. A nil value is
	// a property cleared.
	Properties      map[string]*string
	PrimaryObjectID int64   // MERGE: the record kept
	MergedObjectIDs []int64 // MERGE: the records merged into it
}

type journalEntryJSON struct {
	Offset           string             `json:"offset"`
	PortalID         int64              `json:"portalId"`
	AppID            int64              `json:"appId"`
	SubscriptionID   int64              `json:"subscriptionId"`
	SubscriptionType string             `json:"subscriptionType"`
	ObjectTypeID     string             `json:"objectTypeId"`
	ObjectID         int64              `json:"objectId"`
	Action           string             `json:"action"`
	OccurredAt       json.RawMessage    `json:"occurredAt"`
	EventID          json.RawMessage    `json:"eventId"`
	ChangeSource     string             `json:"changeSource"`
	Properties       map[string]*string `json:"properties"`
	PrimaryObjectID  int64              `json:"primaryObjectId"`
	MergedObjectIDs  []int64            `json:"mergedObjectIds"`
}

// ParseJournalEntries reads entry data: one JSON object, an array of them,
// or newline-delimited objects ([unverified]: which one HubSpot sends).
func ParseJournalEntries(data []byte) ([]JournalEntry, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out []JournalEntry
	for {
		var v json.RawMessage
		if err := dec.Decode(&v); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("the entry data is not JSON: %w", err)
		}
		var list []journalEntryJSON
		if t := bytes.TrimSpace(v); len(t) > 0 && t[0] == '[' {
			if err := json.Unmarshal(v, &list); err != nil {
				return nil, fmt.Errorf("the entry data is not a list of entries: %w", err)
			}
		} else {
			var one journalEntryJSON
			if err := json.Unmarshal(v, &one); err != nil {
				return nil, fmt.Errorf("the entry data is not an entry: %w", err)
			}
			list = append(list, one)
		}
		for _, e := range list {
			entry, err := e.entry()
			if err != nil {
				return nil, err
			}
			out = append(out, entry)
		}
	}
}

func (e journalEntryJSON) entry() (JournalEntry, error) {
	at, err := timeOf(e.OccurredAt)
	if err != nil {
		return JournalEntry{}, fmt.Errorf("entry of object %d: occurredAt: %w", e.ObjectID, err)
	}
	if e.Action == "" {
		return JournalEntry{}, fmt.Errorf("entry of object %d has no action", e.ObjectID)
	}
	return JournalEntry{Offset: e.Offset, PortalID: e.PortalID, AppID: e.AppID, SubscriptionID: e.SubscriptionID,
		SubscriptionType: e.SubscriptionType, ObjectTypeID: e.ObjectTypeID, ObjectID: e.ObjectID, Action: e.Action,
		OccurredAt: at, EventID: scalar(e.EventID), ChangeSource: e.ChangeSource, Properties: e.Properties,
		PrimaryObjectID: e.PrimaryObjectID, MergedObjectIDs: e.MergedObjectIDs}, nil
}

// timeOf reads epoch milliseconds (HubSpot's webhooks) or an ISO 8601 string.
func timeOf(raw json.RawMessage) (time.Time, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return time.Time{}, errors.New("missing")
	}
	var ms int64
	if err := json.Unmarshal(raw, &ms); err == nil {
		return millis(ms), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return time.Time{}, fmt.Errorf("%s is neither epoch milliseconds nor a date", raw)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}

// scalar is a JSON number or string as text ("" when absent).
func scalar(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	return string(raw)
}
