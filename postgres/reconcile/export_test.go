package reconcile

// What the package's external tests reach inside.
var OwnConn = (*Reconciler).ownConn

const LockKey = reconcileLockKey
const ClosedAfter = reconcileClosedAfter
