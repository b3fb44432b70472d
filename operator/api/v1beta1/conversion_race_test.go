//go:build race

package v1beta1

// raceDetector: the race detector makes a conversion some ten times slower;
// the property tests then convert a tenth of their objects (the race
// detector looks for races, the plain run for lossy conversions).
const raceDetector = true
