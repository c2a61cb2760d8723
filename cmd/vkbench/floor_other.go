//go:build !unix

package main

import "os/exec"

// killGroupOnCancel leaves cmd as it is where there are no Unix process
// groups: cancelling its context kills the shell alone.
func killGroupOnCancel(cmd *exec.Cmd) {}
