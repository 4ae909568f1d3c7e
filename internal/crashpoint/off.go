//go:build !crashpoints

package crashpoint

// Enabled reports whether Hit can kill the process: the binary was built
// with the crashpoints tag.
const Enabled = false

// Hit does nothing: the binary was built without the crashpoints tag,
// and KASSA_TEST_CRASHPOINT is not read.
func Hit(point string) {}
