package pg

import "github.com/jackc/pgx/v5/pgxpool"

// Pools are the connection pools a store and each of its engines are
// given when they are made. Write serves ingest, every write and the
// maintenance jobs. Read serves the reads of the console and the API, their
// sessions and sign-ins, so that a saturated ingest pool leaves operators a
// way in and a slow search cannot take connections from ingest; nil (or
// Write itself) means one pool for both.
type Pools struct {
	Write, Read *pgxpool.Pool
}

// ForReads is the pool of the reads: Read, else Write.
func (p Pools) ForReads() *pgxpool.Pool {
	if p.Read == nil {
		return p.Write
	}
	return p.Read
}
