//go:build race

package webtest

// RaceDetector is whether the tests run with -race, which slows every
// request down several times over, so latency claims are not measured.
const RaceDetector = true
