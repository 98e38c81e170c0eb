//go:build race

package config

// raceEnabled: the race detector slows parsing several times over.
const raceEnabled = true
