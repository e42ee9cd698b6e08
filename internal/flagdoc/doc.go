// Package flagdoc renders a command's options the way its usage line, its
// manual page and the README spell them: "--name VALUE", never the flag
// package's single-dash "-name".
package flagdoc
