//go:build race

package web_test

// raceDetector is whether the tests run with -race, which slows every
// request down several times over, so latency claims are not measured.
const raceDetector = true
