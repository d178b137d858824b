#!/usr/bin/env python3
"""OpenBLAS's sgemm on the shapes of BenchmarkSgemmTrainShapes (engine/cpu/kernels), one thread,
through ctypes: the peer of posformer's Sgemm in benchmarks/SPEED.md.

    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 benchmarks/peers/sgemm_openblas.py [libopenblas.so.0]

Prints GFLOP/s per shape (m×n×k, A^T or B^T as the Go benchmark names them), the mean of 60
calls after one untimed call, operands reused (warm in cache, as the Go benchmark keeps them).
"""
import ctypes
import sys
import time

lib = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else "libopenblas.so.0")
sgemm = lib.cblas_sgemm
sgemm.argtypes = [ctypes.c_int] * 6 + [ctypes.c_float, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                                       ctypes.c_int, ctypes.c_float, ctypes.c_void_p, ctypes.c_int]
ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112


def rate(m, n, k, ta, tb, reps=60):
    a = (ctypes.c_float * (m * k))(*([0.5] * (m * k)))
    b = (ctypes.c_float * (k * n))(*([0.25] * (k * n)))
    c = (ctypes.c_float * (m * n))()
    args = (ROW_MAJOR, TRANS if ta else NO_TRANS, TRANS if tb else NO_TRANS, m, n, k, 1.0,
            a, m if ta else k, b, k if tb else n, 0.0, c, n)
    sgemm(*args)
    t = time.perf_counter()
    for _ in range(reps):
        sgemm(*args)
    return 2 * m * n * k / ((time.perf_counter() - t) / reps) / 1e9


for m, n, k, ta, tb in [(512, 512, 512, 0, 0), (2048, 512, 128, 0, 1), (512, 128, 2048, 1, 0),
                        (2048, 128, 512, 0, 0), (2048, 128, 128, 0, 1)]:
    name = "%dx%dx%d%s" % (m, n, k, ", A^T" if ta else ", B^T" if tb else "")
    print("%-20s %6.1f GFLOP/s" % (name, rate(m, n, k, ta, tb)))
