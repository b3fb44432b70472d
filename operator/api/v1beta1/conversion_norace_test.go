//go:build !race

package v1beta1

const raceDetector = false
