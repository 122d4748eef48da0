package console

// SignInAddressBurst is the in-memory budget of failed sign-ins of a
// client address over all accounts.
const SignInAddressBurst = addressBurst
