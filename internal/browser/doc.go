// Package browser is test support: it runs Debian's headless Chromium and
// drives it over the DevTools protocol on a pipe (--remote-debugging-pipe:
// JSON messages ending in a NUL byte on file descriptors 3 and 4), so a
// test can open a page, click and read the DOM as a person's browser
// would. Four protocol methods are all the tests need, which is why this
// is written here rather than taken from a client library.
package browser
