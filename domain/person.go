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
