package reader

// Source is a plan entry that is not a file: a driver call, such as the
// ethtool statistics ioctl, that ends in a firmware command and can hang in
// the kernel just like a sysfs read.
type Source interface {
	Read() error
	Close()
}

// NewSource makes a plan entry whose read is src.Read, run by the same
// worker under the same deadline and stuck accounting as the files: name
// stands for the path (stuck reports, the skip while a read hangs), so it
// must not collide with a file's path, e.g. "ethtool:eth2". The value stays
// in src; Value is empty. Close closes src unless its read is stuck, in
// which case the blocked call keeps it.
func NewSource(name string, src Source) *File {
	f := NewFile(name)
	f.src = src
	return f
}

// IsSource reports whether f is a driver call (NewSource) rather than a
// file: it has no path to open.
func (f *File) IsSource() bool { return f.src != nil }
