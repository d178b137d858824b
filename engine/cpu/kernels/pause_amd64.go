package kernels

// Pause is the CPU's spin-wait hint (PAUSE): a polling loop that calls it leaves the core's
// resources to a sibling hardware thread and does not flood the memory order machinery with
// speculative loads of the flag it polls.
func Pause()
