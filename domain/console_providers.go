package domain

// ProviderAdminService serves provider connections, secrets, scopes, deliveries and API tokens.
type ProviderAdminService interface{}
