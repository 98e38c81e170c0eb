//go:build race

package proxy

// raceEnabled: the race detector multiplies memory (shadow) and time.
const raceEnabled = true
