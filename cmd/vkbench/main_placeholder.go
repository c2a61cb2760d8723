package main

import (
	"fmt"
	"os"
)

// main stands in until the suites are written, so that the output layer
// builds and tests as a package main on its own.
func main() {
	fmt.Fprintln(os.Stderr, "vkbench: suites not built yet")
	os.Exit(2)
}
