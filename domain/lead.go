package domain

import (
	"crypto/sha256"
	"encoding/binary"
	"regexp"
	"strings"
)

// LeadSignupType is the standard event type of a lead signup.
const LeadSignupType = "lead.signup"

// Lead is a signup: a person to find or create by email, their account by
// domain, and the campaign they joined.
type Lead struct {
	Email    string `json:"email"`
	Name     string `json:"name,omitempty"`
	Company  string `json:"company,omitempty"`
	Domain   string `json:"domain,omitempty"` // empty: no account (a free-mail address)
	Campaign string `json:"campaign"`
	Source   string `json:"source,omitempty"`
}

var emailPattern = regexp.MustCompile(`^[^@\s]+@[^@\s]+\.[^@\s]+$`)

// freeMail lists domains whose addresses say nothing about an employer.
var freeMail = map[string]bool{
	"gmail.com": true, "googlemail.com": true, "yahoo.com": true, "hotmail.com": true, "outlook.com": true,
	"live.com": true, "msn.com": true, "icloud.com": true, "me.com": true, "aol.com": true, "proton.me": true,
	"protonmail.com": true, "gmx.com": true, "gmx.de": true, "mail.com": true, "yandex.com": true,
}

// NormalizeLead trims and lower-cases the email and domain, defaults the
// domain to the email's unless it is a free-mail domain, and checks the
// required fields. The error message is the event's reject reason.
func NormalizeLead(l Lead) (Lead, error) {
	l.Email = strings.ToLower(strings.TrimSpace(l.Email))
	if !emailPattern.MatchString(l.Email) || len(l.Email) > 254 {
		return l, Errorf(EINVALID, "data.email %q is not a valid email address", l.Email)
	}
	l.Campaign = strings.TrimSpace(l.Campaign)
	if l.Campaign == "" {
		return l, Errorf(EINVALID, "data.campaign is required")
	}
	l.Domain = strings.ToLower(strings.TrimSpace(l.Domain))
	if l.Domain == "" {
		if d := l.Email[strings.LastIndex(l.Email, "@")+1:]; !freeMail[d] {
			l.Domain = d
		}
	}
	l.Name, l.Company, l.Source = strings.TrimSpace(l.Name), strings.TrimSpace(l.Company), strings.TrimSpace(l.Source)
	return l, nil
}

// LeadLockKeys are the advisory-lock keys of a lead's identities (person,
// then account when there is one), sorted so that every transaction takes
// shared locks in one global order and two signups can never deadlock.
func LeadLockKeys(tenantID int64, l Lead) []int64 {
	keys := []int64{lockKey(tenantID, "person", l.Email)}
	if l.Domain != "" {
		keys = append(keys, lockKey(tenantID, "account", l.Domain))
	}
	if len(keys) == 2 && keys[1] < keys[0] {
		keys[0], keys[1] = keys[1], keys[0]
	}
	return keys
}

func lockKey(tenantID int64, kind, identity string) int64 {
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(tenantID))
	h.Write(n[:])
	h.Write([]byte(kind + "\x00" + identity))
	return int64(binary.BigEndian.Uint64(h.Sum(nil)[:8]))
}
