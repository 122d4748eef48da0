package domain

// EventLogService serves event history: filtered, keyset-paginated event log and event detail.
type EventLogService interface{}
