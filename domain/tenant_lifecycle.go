package domain

import (
	"context"
	"strings"
)

// Audit actions of a tenant's lifecycle (issue 49), an admin's. Each is
// recorded outside any tenant (tenant 0), so that a deleted tenant's
// record survives it.
const (
	AuditTenantCreate    = "tenant_create"
	AuditTenantRename    = "tenant_rename"
	AuditTenantArchive   = "tenant_archive"
	AuditTenantUnarchive = "tenant_unarchive"
	AuditTenantDelete    = "tenant_delete"
)

// MaxTenantNameLength bounds a tenant's display name.
const MaxTenantNameLength = 200

// CheckTenantName refuses an empty or overlong display name.
func CheckTenantName(name string) error {
	switch n := strings.TrimSpace(name); {
	case n == "":
		return Errorf(EINVALID, "the name must not be empty")
	case len(n) > MaxTenantNameLength:
		return Errorf(EINVALID, "the name must be at most %d bytes", MaxTenantNameLength)
	}
	return nil
}

// Status is "archived" or "active".
func (t Tenant) Status() string {
	if t.ArchivedAt != nil {
		return "archived"
	}
	return "active"
}

// TableRows is how many rows of one tenant-owned table belong to a tenant.
type TableRows struct {
	Table string
	Rows  int64
}

// TenantLifecycle is an admin's: list, rename, archive, unarchive and
// delete tenants, each change audited. An archived tenant refuses
// deliveries and answers 404 on its API and console; its data is kept.
type TenantLifecycle interface {
	// Tenants lists every tenant, archived ones too, by slug.
	Tenants(ctx context.Context) ([]Tenant, error)
	// RenameTenant changes a tenant's display name; the slug stays.
	RenameTenant(ctx context.Context, slug, name string) (Tenant, error)
	// ArchiveTenant archives an active tenant (ECONFLICT if archived).
	ArchiveTenant(ctx context.Context, slug string) (Tenant, error)
	// UnarchiveTenant makes an archived tenant active again (ECONFLICT if
	// it is active).
	UnarchiveTenant(ctx context.Context, slug string) (Tenant, error)
	// TenantRows counts the tenant's rows in each tenant-owned table that
	// holds some: what DeleteTenant would erase.
	TenantRows(ctx context.Context, slug string) ([]TableRows, error)
	// DeleteTenant erases the tenant's rows from every tenant-owned table
	// but the audit log, then the tenant, in one transaction, and returns
	// what it erased.
	DeleteTenant(ctx context.Context, slug string) ([]TableRows, error)
}
