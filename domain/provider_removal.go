package domain

import "context"

// AuditProviderDelete is an owner's removal of a provider (issue 49).
const AuditProviderDelete = "provider_delete"

// ProviderRemoval is what removing a provider deletes and what it keeps.
// Its history stays under RemovedAs, "NAME (removed)" (a name no webhook
// URL can take, so the name is free again), unless it is erased.
type ProviderRemoval struct {
	Name, RemovedAs string
	// Deleted: signing secrets, API credentials (0 or 1), Change Data
	// Capture streams (0 or 1), app installs (portals mapped to it), and
	// backfills cancelled.
	Secrets, Credentials, CDCStreams, Installs, Backfills int64
	// Its history: records, deliveries and events.
	Records, Deliveries, Events int64
	// Erased is what the erase took, each record erased as EraseRecord
	// does; nil when the history is kept.
	Erased *Erasure
}

// ProviderRemover removes a tenant's providers, an owner's act.
type ProviderRemover interface {
	// ProviderRemoval says what RemoveProvider would do, changing
	// nothing; ENOTFOUND for an unknown provider.
	ProviderRemoval(ctx context.Context, tenantID, providerID int64) (ProviderRemoval, error)
	// RemoveProvider removes the provider in one transaction, audited:
	// its webhook URL answers 404 from then on, its secrets, credentials,
	// CDC stream and app installs are deleted, its backfills cancelled,
	// and with erase every record and event of it erased and its delivery
	// bodies removed.
	RemoveProvider(ctx context.Context, tenantID, providerID int64, erase bool) (ProviderRemoval, error)
}
