package access

// SetCompareHash replaces the password check for a test; the returned
// func restores it.
func SetCompareHash(f func(hash, password []byte) error) (restore func()) {
	old := compareHash
	compareHash = f
	return func() { compareHash = old }
}
