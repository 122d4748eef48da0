package access

// SetCompareHash replaces the password check for a test; the returned
// func restores it.
func SetCompareHash(f func(hash, password []byte) error) (restore func()) {
	old := compareHash
	compareHash = f
	return func() { compareHash = old }
}

// SetAddressChecks lowers the sign-in limit of an address over all
// accounts for the store of s, so that a test reaches it in a few checks.
func SetAddressChecks(s *Sessions, n int) { s.addressChecks = n }

// SetPasswordChecks replaces the bound on password checks running at
// once, and on those waiting for a place; the returned func restores it.
func SetPasswordChecks(places, waiting int) (restore func()) {
	old := passwordChecks
	passwordChecks = newCheckGate(places, waiting)
	return func() { passwordChecks = old }
}
