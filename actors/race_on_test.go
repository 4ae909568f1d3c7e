//go:build race

package actors

// raceEnabled says the tests run under the race detector.
const raceEnabled = true
