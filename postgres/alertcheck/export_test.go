package alertcheck

// What the package's external tests reach inside.
const LockKey = evaluationLockKey
