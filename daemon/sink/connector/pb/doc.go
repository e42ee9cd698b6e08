// Package pb holds the Go code generated from health_event.proto: the
// messages and the PlatformConnector client/server stubs that NVSentinel's
// platform connector speaks. Do not edit the .pb.go files; change the
// .proto and run generate.sh.
package pb
