"""Where error is born: the local-error rule, the scan of every op, compare-all with the same roots as bisect, the bisection (bisect/) and the float64 replay of ops (replay/)."""
