package domain

import (
	"context"
	"strings"
	"time"
)

// PeopleService serves the people that lead.signup deliveries created,
// with their accounts, tasks and campaign memberships.
type PeopleService interface {
	// People returns one page of the tenant's people, newest first (by
	// creation time, then id), and the cursor of the next page ("" on the
	// last). With email set it returns only that person (the email is
	// normalised first), or none, and no cursor. An invalid cursor is an
	// EINVALID error.
	People(ctx context.Context, tenantID int64, email string, page Page) ([]Person, string, error)
	// PersonDetail returns one person with their account's other people, or
	// an ENOTFOUND error.
	PersonDetail(ctx context.Context, tenantID, personID int64) (PersonDetail, error)
	// SearchPeople returns one page of the people whose email or name
	// starts with q, or whose email's domain does (case-insensitive; "" is
	// everyone), newest first, with cursors both ways and bounded counts.
	// An invalid cursor is an EINVALID error.
	SearchPeople(ctx context.Context, tenantID int64, q string, page Page) (PeopleList, error)
	// LeadSignups returns the latest lead.signup events naming the email
	// (up to limit), newest first, whatever their outcome: of one provider,
	// or of every provider when provider is "". An unknown provider is an
	// ENOTFOUND error.
	LeadSignups(ctx context.Context, tenantID int64, provider, email string, limit int) ([]LoggedEvent, error)
}

// PeopleCountCap bounds the counts of a people search: PeopleList.Total
// and Newer above it mean "more than PeopleCountCap".
const PeopleCountCap = 1000

// PeopleList is one page of a people search. Older and Newer are the
// Page.Cursor and Page.Before of the pages either side ("" when none).
// Total counts the matches and Ahead the matches before this page, each
// up to PeopleCountCap+1.
type PeopleList struct {
	People       []Person
	Older, Newer string
	Total, Ahead int
}

// NormalizeEmail trims and lower-cases an email address as lead signups do.
func NormalizeEmail(email string) string {
	return strings.ToLower(strings.TrimSpace(email))
}

// Person is someone who signed up, with what their signups created.
type Person struct {
	ID        int64
	Email     string
	Name      string
	Source    string
	CreatedAt time.Time
	Account   *Account // nil when they have none (a free-mail address)
	Tasks     []Task
	Campaigns []CampaignMembership
}

// OpenTasks counts the person's open tasks.
func (p Person) OpenTasks() int {
	n := 0
	for _, t := range p.Tasks {
		if t.Status == TaskOpen {
			n++
		}
	}
	return n
}

// Account is a company, found by its email domain.
type Account struct {
	ID     int64
	Domain string
	Name   string
}

// Task statuses.
const (
	TaskOpen = "open"
	TaskDone = "done"
)

// Task is a follow-up for a person.
type Task struct {
	ID        int64
	Kind      string
	Title     string
	Status    string
	CreatedAt time.Time
}

// CampaignMembership is a campaign a person joined.
type CampaignMembership struct {
	Campaign string
	Source   string
	JoinedAt time.Time
}

// PersonBrief names a person.
type PersonBrief struct {
	ID    int64
	Email string
	Name  string
}

// PersonDetail is one person and the other people of their account.
type PersonDetail struct {
	Person
	Colleagues []PersonBrief // other people of the account, by email
}
