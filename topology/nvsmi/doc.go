// Package nvsmi reads the GPU↔NIC matrix that `nvidia-smi topo -m` prints
// (the only form in which nvidia-smi offers it) into a gpumeta.Matrix, as
// operators paste it: tabs or spaces, colour escapes, legends, old headers.
// A paste it cannot read unambiguously is an error naming the line and
// column, never a silently shifted matrix.
package nvsmi
